# SPDX-License-Identifier: GPL-2.0
# bash completion for tapfence(8): its commands and options as `tapfence --help' lists them,
# session ids from the daemon (`tapfence --json session list'), reasons from `tapfence reasons',
# files where a command takes one. Installed by make install to
# $(PREFIX)/share/bash-completion/completions/tapfence.

# The words of `tapfence --help' synopses that follow the words typed so far.
_tapfence_next() {
	local typed=$1
	tapfence --help 2>/dev/null | sed -n 's/^  \([a-z][^[]*\).*/\1/p' | while read -r line; do
		set -- $line
		local t=$typed w
		for w; do
			[ -z "$t" ] && { printf '%s\n' "$w"; break; }
			[ "${t%% *}" = "$w" ] || break
			t=${t#"$w"}
			t=${t# }
		done
	done | sort -u
}

_tapfence_sessions() {
	tapfence --json session list 2>/dev/null | sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' |
		tr ',' '\n' | grep -v '^$'
}

_tapfence() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local i words=() typed
	COMPREPLY=()
	case $prev in
	--session) COMPREPLY=($(compgen -W "$(_tapfence_sessions)" -- "$cur")); return ;;
	--reason) COMPREPLY=($(compgen -W "$(tapfence reasons 2>/dev/null)" -- "${cur##*,}"))
		[ "${cur%,*}" != "$cur" ] && COMPREPLY=("${COMPREPLY[@]/#/${cur%,*},}")
		return ;;
	--verdict) COMPREPLY=($(compgen -W "allow deny audit" -- "$cur")); return ;;
	-o) COMPREPLY=($(compgen -W "compact table json" -- "$cur")); return ;;
	--socket | --log | --out | --key | --key-file | --spec | --bundle | --trusted-checkpoint)
		COMPREPLY=($(compgen -f -- "$cur")); return ;;
	esac
	# The command words typed so far, options and their values left out.
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--socket | --timeout) ((i++)) ;;
		-*) ;;
		*) words+=("${COMP_WORDS[i]}") ;;
		esac
	done
	typed=${words[*]}
	case $typed in
	"session del" | "session show" | "session mode" | "session quarantine" | "session resume" | \
		"rule add" | "rule del" | "policy suggest")
		COMPREPLY=($(compgen -W "$(_tapfence_sessions)" -- "$cur")); return ;;
	"session mode "*) COMPREPLY=($(compgen -W "enforce audit" -- "$cur")); return ;;
	"session add") COMPREPLY=($(compgen -f -- "$cur")); return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(tapfence --help 2>/dev/null | grep -oE -- '--[a-z-]+' | sort -u)" -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -W "$(_tapfence_next "$typed")" -- "$cur"))
}
complete -F _tapfence tapfence
