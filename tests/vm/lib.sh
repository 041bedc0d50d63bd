# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# MicroVM helpers for tests/vm/*.sh and tools/demo.sh, on top of tests/netns/lib.sh (source that
# first): build the guest image, boot a guest with QEMU's microvm machine on a tap in a test
# namespace, and run probes in it over its serial console.
#
#   vm_prereqs || skip               # names what is missing in $VM_MISSING
#   vm_image                         # tools/vm/build-image.sh into $TF_BUILD/vm (cached)
#   tap_link "$host" tva ...         # the tap (tests/netns/lib.sh), before the guest boots
#   vm_start a "$host" tva MAC 10.40.1.2/24 10.40.1.1 [IP6/LEN GW6 [SERVE_PORT]]
#   vm_ready a || die ...            # waits for READY; boots once more if it does not come
#   vm_run a get 198.51.100.10 80    # a command of tools/vm/guest-init.sh; sets VM_RC, VM_OUT
#
# QEMU runs inside the test namespace (ip netns exec), attached to the tap there, and is killed
# by PID at cleanup. Its serial console is a pair of FIFOs ($T/vm-NAME.in/.out, QEMU's `pipe'
# chardev): the host writes a command line, the guest answers "OUT ..." lines and one
# "PROBE ID rc=N" line, all copied into $T/vm-NAME.console. The guest's exit status is only its own
# view; tests judge by what the host's listeners and the event feed saw.

VM_DIR=$TF_BUILD/vm
VM_QEMU=${VM_QEMU:-qemu-system-x86_64}
VM_BOOT_TIMEOUT=${VM_BOOT_TIMEOUT:-40} # seconds to READY; a boot under TCG takes 2-5
VM_MEM=${VM_MEM:-192}

declare -A vm_pid=() vm_cat=() vm_fd=() vm_con=() vm_args=() vm_boot_s=()
vm_seq=0

# vm_prereqs: 0 iff everything a guest needs is installed; else $VM_MISSING names it.
vm_prereqs() {
	VM_MISSING=
	[ "$(uname -m)" = x86_64 ] || VM_MISSING+=" an x86_64 host"
	command -v "$VM_QEMU" >/dev/null || VM_MISSING+=" qemu-system-x86"
	[ -x /bin/busybox ] && [[ $(readelf -l /bin/busybox 2>/dev/null) != *"program interpreter"* ]] ||
		VM_MISSING+=" busybox-static"
	[ -e /usr/share/qemu/bios-microvm.bin ] || VM_MISSING+=" qemu-system-data"
	[ -z "$VM_MISSING" ]
}

# vm_image: the kernel and initramfs (built on first use, then cached).
vm_image() {
	local t0=$SECONDS
	"$TF_ROOT/tools/vm/build-image.sh" "$VM_DIR" >"$T/vm-image.log" 2>&1 || {
		sed 's/^/# build-image: /' "$T/vm-image.log"
		return 1
	}
	[ -s "$T/vm-image.log" ] && { sed 's/^/# /' "$T/vm-image.log"; note "guest image built in $((SECONDS - t0)) s"; }
	VM_KERNEL=$VM_DIR/kernel/vmlinuz
	VM_INITRD=$VM_DIR/initramfs.gz
}

# vm_tsc_khz: the host's TSC frequency in kHz. Under TCG the guest reads the host's TSC, and
# without tsc_early_khz its calibration against the emulated PIT comes out wrong or slow.
vm_tsc_khz() {
	local khz
	khz=$(cat /sys/devices/system/cpu/cpu0/tsc_freq_khz 2>/dev/null) ||
		khz=$(dmesg 2>/dev/null | sed -n 's/.*tsc: Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p' | tail -n 1)
	[ -n "$khz" ] || khz=$(dmesg 2>/dev/null | sed -n 's/.*tsc: Detected \([0-9.]*\) MHz.*/\1/p' | tail -n 1)
	[ -n "$khz" ] || khz=$(awk -F': *' '/^cpu MHz/ { print $2; exit }' /proc/cpuinfo)
	case $khz in
	*.*) awk -v m="$khz" 'BEGIN { printf "%d\n", m * 1000 }' ;; # MHz with decimals
	'') echo 0 ;;
	*) echo "$khz" ;;
	esac
}

# vm_pick_accel: set VM_ACCEL to tcg, or to kvm only if /dev/kvm boots this very guest (KVM on
# this machine may be a software hypervisor that a stock guest kernel hangs on). The probe runs
# once per host kernel, QEMU and guest kernel, and is cached in $VM_DIR; TF_VM_ACCEL=tcg|kvm
# skips it.
vm_pick_accel() {
	local cache ver
	VM_ACCEL=${TF_VM_ACCEL:-}
	[ -n "$VM_ACCEL" ] && return 0
	VM_ACCEL=tcg
	[ -r /dev/kvm ] && [ -w /dev/kvm ] || return 0
	ver=$("$VM_QEMU" --version | awk '{ print $4; exit }')
	cache=$VM_DIR/accel-$(uname -r)-$ver-$(cat "$VM_DIR/kernel/release")
	if [ ! -s "$cache" ]; then
		note "probing whether KVM boots the guest (once; cached in $cache)"
		if vm_start_one accelprobe "" "" "" "" "" "" "" "" kvm && vm_wait_ready accelprobe 6 quiet; then
			echo kvm >"$cache"
		else
			echo tcg >"$cache"
		fi
		vm_stop accelprobe
	fi
	VM_ACCEL=$(cat "$cache")
}

# vm_start NAME NS TAP MAC IP4/LEN GW4 [IP6/LEN GW6 [SERVE_PORT]]: boot a guest in the background.
vm_start() {
	[ -n "${VM_ACCEL:-}" ] || vm_pick_accel
	vm_args[$1]="$*"
	vm_start_one "$1" "$2" "$3" "$4" "$5" "$6" "${7:-}" "${8:-}" "${9:-}" "$VM_ACCEL"
}

# vm_start_one NAME NS TAP MAC IP4 GW4 IP6 GW6 SERVE ACCEL: one QEMU process (NS "" for no network).
vm_start_one() {
	local name=$1 ns=$2 tap=$3 mac=$4 ip4=$5 gw4=$6 ip6=$7 gw6=$8 serve=$9 accel=${10}
	local fifo=$T/vm-$name cmdline net=() fd
	cmdline="console=ttyS0 panic=-1 pci=off quiet tsc_early_khz=$(vm_tsc_khz) tf.name=$name"
	[ -n "$ip4" ] && cmdline+=" tf.ip4=$ip4 tf.gw4=$gw4"
	[ -n "$ip6" ] && cmdline+=" tf.ip6=$ip6 tf.gw6=$gw6"
	[ -n "$serve" ] && cmdline+=" tf.serve=$serve"
	[ -n "$tap" ] && net=(-netdev "tap,id=net0,ifname=$tap,script=no,downscript=no"
		-device "virtio-net-device,netdev=net0,mac=$mac")
	rm -f "$fifo.in" "$fifo.out"
	mkfifo "$fifo.in" "$fifo.out" || return
	vm_con[$name]=$fifo.console
	: >"${vm_con[$name]}"
	tf_watch "${vm_con[$name]}"
	# Both FIFO ends opened read-write: neither side ever blocks in open() or sees EOF, and a
	# write to a dead guest fills the pipe instead of hanging the test.
	exec {fd}<>"$fifo.in"
	vm_fd[$name]=$fd
	cat <>"$fifo.out" >>"${vm_con[$name]}" &
	vm_cat[$name]=$!
	defer kill_pid "${vm_cat[$name]}"
	local qemu=("$VM_QEMU" -M microvm -accel "$accel" -m "$VM_MEM" -smp 1
		-nodefaults -no-user-config -display none -no-reboot
		-kernel "$VM_KERNEL" -initrd "$VM_INITRD" -append "$cmdline"
		-chardev "pipe,id=con,path=$fifo" -serial chardev:con "${net[@]}")
	if [ -n "$ns" ]; then
		ip netns exec "$ns" "${qemu[@]}" >"$T/vm-$name.qemu.log" 2>&1 &
	else
		# The KVM probe: no network, so no namespace needed; still killed by PID.
		"${qemu[@]}" >"$T/vm-$name.qemu.log" 2>&1 &
	fi
	vm_pid[$name]=$!
	vm_boot_s[$name]=$(date +%s.%N)
	defer kill_pid "${vm_pid[$name]}"
}

# vm_stop NAME: kill the guest's QEMU and console reader, close the console FIFO.
vm_stop() {
	local name=$1 fd=${vm_fd[$1]:-}
	[ -n "${vm_pid[$name]:-}" ] && kill_pid "${vm_pid[$name]}"
	[ -n "${vm_cat[$name]:-}" ] && kill_pid "${vm_cat[$name]}"
	[ -n "$fd" ] && exec {fd}>&-
	vm_pid[$name]='' vm_cat[$name]='' vm_fd[$name]=''
	return 0
}

# vm_console NAME: the guest's console so far, without carriage returns.
vm_console() { tr -d '\r' <"${vm_con[$1]}"; }

# vm_wait_ready NAME [SECS [quiet]]: wait for the guest's READY line; non-zero if it did not come
# (or QEMU exited). Notes the boot time, or the console's last lines.
vm_wait_ready() {
	local name=$1 secs=${2:-$VM_BOOT_TIMEOUT} quiet=${3:-} i up
	for ((i = 0; i < secs * 10; i++)); do
		if grep -q "^READY $name " <(vm_console "$name"); then
			up=$(vm_console "$name" | awk -v n="$name" '$1 == "READY" && $2 == n { print $3; exit }')
			VM_READY_S=$(awk -v t0="${vm_boot_s[$name]}" -v now="$(date +%s.%N)" 'BEGIN { printf "%.1f", now - t0 }')
			[ -n "$quiet" ] || note "guest $name: READY after ${VM_READY_S} s (guest uptime $up s)"
			return 0
		fi
		kill -0 "${vm_pid[$name]}" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$quiet" ] && return 1
	if kill -0 "${vm_pid[$name]}" 2>/dev/null; then
		note "guest $name: no READY within $secs s; its console said:"
	else
		note "guest $name: QEMU exited before READY; its console and QEMU said:"
	fi
	vm_console "$name" | tail -n 15 | sed 's/^/#   console: /'
	sed 's/^/#   qemu: /' "$T/vm-$name.qemu.log" 2>/dev/null | tail -n 5
	return 1
}

# vm_ready NAME: wait for the READY line of a guest started with vm_start; if it does not come,
# boot the guest once more and wait again. Only a boot is ever retried, never a probe.
vm_ready() {
	local name=$1
	vm_wait_ready "$name" && return 0
	note "guest $name: rebooting once"
	vm_stop "$name"
	# shellcheck disable=SC2086 # the arguments vm_start had, as words
	vm_start ${vm_args[$name]}
	vm_wait_ready "$name"
}

# vm_run NAME COMMAND...: send COMMAND to the guest and wait (up to VM_RUN_TIMEOUT, 15 s) for its
# PROBE line. Sets VM_RC (the guest's exit status, or "none" when no answer came) and writes the
# OUT lines to $VM_OUT. Returns 0 iff the guest said rc=0.
vm_run() {
	local name=$1 id i off
	shift
	vm_seq=$((vm_seq + 1))
	# The shell's PID too: a caller in a subshell ($(...)) cannot count for the next one.
	id=$vm_seq.$BASHPID-$name
	VM_OUT=$T/vm-run.out
	off=$(stat -c %s "${vm_con[$name]}")
	printf '%s %s\n' "$id" "$*" >&"${vm_fd[$name]}"
	VM_RC=none
	for ((i = 0; i < ${VM_RUN_TIMEOUT:-15} * 20; i++)); do
		tail -c +$((off + 1)) "${vm_con[$name]}" | tr -d '\r' >"$T/vm-run.all"
		if grep -q "^PROBE $id rc=" "$T/vm-run.all"; then
			VM_RC=$(sed -n "s/^PROBE $id rc=\([0-9]*\).*/\1/p" "$T/vm-run.all" | head -n 1)
			break
		fi
		sleep 0.05
	done
	sed -n "s/^OUT $id //p" "$T/vm-run.all" >"$VM_OUT"
	[ "$VM_RC" = 0 ]
}

# vm_out_note: the last command's output as comments (for a failed check).
vm_out_note() {
	if [ -s "${VM_OUT:-}" ]; then
		sed 's/^/#   guest: /' <(head -n 4 "$VM_OUT")
	else
		note "  guest: (no output; rc=$VM_RC)"
	fi
}
