# SPDX-License-Identifier: GPL-2.0
# tapfence: one non-recursive Makefile, everything built into build/.

BUILD    ?= build
CLANG    ?= clang
BPFTOOL  ?= bpftool
CC       ?= gcc
ARCH     := $(shell uname -m)
BPF_ARCH := $(subst x86_64,x86,$(subst aarch64,arm64,$(ARCH)))
VERSION  := 0.1.0

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

WARN      := -Wall -Wextra -Werror
CFLAGS    ?= -O2 -g
ALL_CFLAGS := $(CPPFLAGS) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -DTF_VERSION='"$(VERSION)"' \
	      -Iinclude -Iuser -I$(BUILD) -MMD -MP
LDLIBS    := -lbpf -lelf -lz -lxdp -ljansson -lcap -lcrypto
BPF_CFLAGS := -O2 -g $(WARN) -Wno-unused-function -target bpf -D__TARGET_ARCH_$(BPF_ARCH) \
	      -Iinclude -Ibpf -Ivmlinux -MMD -MP

BPF_SRCS    := $(wildcard bpf/*.bpf.c)
BPF_OBJS    := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/bpf/%.bpf.o)
SKELS       := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/%.skel.h)

# The pure core: parsing and compiling (specs, rules, requests, config, policy, addresses,
# reasons), no I/O and no libbpf, built without build/ on the include path so no skeleton can
# reach it. A static library that the daemon, the CLI, the unit tests and the fuzzers link.
CORE_SRCS   := user/common/addr.c user/common/reason.c user/daemon/jcheck.c user/daemon/spec.c \
	       user/daemon/policy.c user/daemon/config.c user/daemon/request.c
CORE_LIB    := $(BUILD)/libtfcore.a
COMMON_SRCS := $(filter-out $(CORE_SRCS),$(wildcard user/common/*.c))
DAEMON_LIB  := $(filter-out user/daemon/main.c $(CORE_SRCS),$(wildcard user/daemon/*.c))
CTL_SRCS    := $(wildcard user/ctl/*.c)
UNIT_SRCS   := $(wildcard tests/unit/test_*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

CORE_OBJS   := $(call obj,$(CORE_SRCS))
COMMON_OBJS := $(call obj,$(COMMON_SRCS))
DAEMON_OBJS := $(call obj,$(DAEMON_LIB))
UNIT_BINS   := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

.DELETE_ON_ERROR:
# Keep intermediates (BPF objects, skeletons, objects): deleting them forces rebuilds.
.SECONDARY:
.PHONY: all deps test test-unit test-san test-netns demo clean san fuzz

# Helpers the netns tests run (tests/tools/*.c), one binary each.
TOOL_SRCS   := $(wildcard tests/tools/*.c)
TOOL_BINS   := $(TOOL_SRCS:tests/tools/%.c=$(BUILD)/tests/tools/%)

MAN_PAGES := tapfenced.8 tapfence.8 tapfence.conf.5 tapfence-events.7

all: $(BUILD)/tapfenced $(BUILD)/tapfence $(BUILD)/tapfence-cni $(UNIT_BINS) $(TOOL_BINS) man

# The man pages, from the programs' --help and docs/ (tools/man/mkman.py): they cannot drift.
.PHONY: man
man: $(MAN_PAGES:%=$(BUILD)/man/%)
$(MAN_PAGES:%=$(BUILD)/man/%) &: tools/man/mkman.py docs/operations.md docs/events.md \
		$(BUILD)/tapfenced $(BUILD)/tapfence
	$(call msg,MAN,$(BUILD)/man)
	$(Q)python3 tools/man/mkman.py $(BUILD) $(BUILD)/man $(VERSION)

deps:
	$(Q)tools/deps.sh

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c vmlinux/$(ARCH).h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MF $(@:.o=.d) -MT $@ -c $< -o $@.tmp && mv $@.tmp $@

$(BUILD)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@.tmp && mv $@.tmp $@

# Every userspace object may include a skeleton; generate them first.
$(BUILD)/obj/%.o: %.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

CORE_CFLAGS := $(filter-out -I$(BUILD),$(ALL_CFLAGS))
$(CORE_OBJS): $(BUILD)/obj/%.o: %.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CORE_CFLAGS) -c $< -o $@

$(CORE_LIB): $(CORE_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/tapfenced: $(BUILD)/obj/user/daemon/main.o $(DAEMON_OBJS) $(COMMON_OBJS) $(CORE_LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The CLI parses specs as the daemon does (tapfence attest verify --spec): the core.
$(BUILD)/tapfence: $(call obj,$(CTL_SRCS)) $(COMMON_OBJS) $(CORE_LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The CNI plugin (user/cni, docs/integration.md): the core for its JSON checks and ids.
$(BUILD)/tapfence-cni: $(call obj,$(wildcard user/cni/*.c)) $(CORE_LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -ljansson -lcrypto -o $@

# Unit test binaries link the daemon's library objects (not its main) and the core.
$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(DAEMON_OBJS) $(COMMON_OBJS) $(CORE_LIB)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tests/tools/%: tests/tools/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $< -lbpf -o $@

# The same userspace and unit tests built with ASan and UBSan, into build/san.
SAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
san:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/san CFLAGS='$(SAN_CFLAGS)' \
		$(BUILD)/san/tapfenced $(BUILD)/san/tapfence \
		$(UNIT_SRCS:tests/unit/%.c=$(BUILD)/san/tests/%)

# libFuzzer harnesses (tests/fuzz/fuzz_*.c), each run for FUZZ_SECONDS from its committed
# corpus (tests/fuzz/corpus/<name>/, read only); what it finds goes to build/fuzz/corpus-<name>/.
FUZZ_SECONDS ?= 60
FUZZ_SRCS    := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS    := $(FUZZ_SRCS:tests/fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_SAN     := address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS  := -O1 -g $(WARN) -std=gnu11 -D_GNU_SOURCE -Iinclude -Iuser
# The core again, instrumented for coverage (fuzzer-no-link): what a harness may call.
FUZZ_CORE    := $(BUILD)/fuzz/libtfcore.a
FUZZ_CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/fuzz/obj/%.o)

$(FUZZ_CORE_OBJS): $(BUILD)/fuzz/obj/%.o: %.c
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,$(FUZZ_SAN) -MMD -MP -c $< -o $@

$(FUZZ_CORE): $(FUZZ_CORE_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_CORE)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer,$(FUZZ_SAN) -MMD -MP -MF $@.d $< $(FUZZ_CORE) \
		-ljansson -o $@

fuzz: deps $(FUZZ_BINS)
	$(Q)for b in $(FUZZ_BINS); do \
		n=$${b##*/fuzz_}; mkdir -p $(BUILD)/fuzz/corpus-$$n; \
		echo "  FUZZ     $$n for $(FUZZ_SECONDS)s"; \
		case $$n in dns) ml=2112 ;; tls) ml=20000 ;; *) ml=16384 ;; esac; \
		$$b -max_total_time=$(FUZZ_SECONDS) -max_len=$$ml -print_final_stats=1 \
			-artifact_prefix=$(BUILD)/fuzz/ \
			$(BUILD)/fuzz/corpus-$$n tests/fuzz/corpus/$$n || exit 1; \
	done

test: deps all san
	$(Q)tests/run.sh

test-san: deps san
	$(Q)tests/run.sh san

test-unit: deps all
	$(Q)tests/run.sh unit

test-netns: deps all
	$(Q)tests/run.sh netns

demo: deps all
	$(Q)tools/demo.sh

# --- bench (tools/bench, docs/performance.md); not part of `make test' -------------------------
# `make bench [QUICK=1]': tools/bench/*.c built into build/bench/ against the daemon's library
# objects, the no-op baseline programs tools/bench/*.bpf.c as skeletons beside them.
BENCH_BPF_SRCS := $(wildcard tools/bench/*.bpf.c)
BENCH_SKELS    := $(BENCH_BPF_SRCS:tools/bench/%.bpf.c=$(BUILD)/bench/%.skel.h)
BENCH_SRCS     := $(filter-out %.bpf.c,$(wildcard tools/bench/*.c))
BENCH_BINS     := $(BENCH_SRCS:tools/bench/%.c=$(BUILD)/bench/%)

$(BUILD)/bench/%.bpf.o: tools/bench/%.bpf.c vmlinux/$(ARCH).h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MF $(@:.o=.d) -MT $@ -c $< -o $@.tmp && mv $@.tmp $@

$(BUILD)/bench/%.skel.h: $(BUILD)/bench/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@.tmp && mv $@.tmp $@

$(BENCH_BINS): $(BUILD)/bench/%: tools/bench/%.c $(DAEMON_OBJS) $(COMMON_OBJS) $(CORE_LIB) | $(SKELS) $(BENCH_SKELS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -MF $@.d -MT $@ $< $(DAEMON_OBJS) $(COMMON_OBJS) $(CORE_LIB) $(LDLIBS) -o $@

# `make battery': the isolation battery (tools/battery.sh) against this build and kernel; its report,
# copied to <state_dir>/battery.json, is what `tapfence attest' binds (docs/attest.md).
.PHONY: battery
battery: deps all
	$(Q)tools/battery.sh --out $(BUILD)/battery.json

.PHONY: bench
bench: deps all $(BENCH_BINS)
	$(Q)QUICK=$(QUICK) BUILD=$(BUILD) tools/bench/run.sh
# --- end of bench ------------------------------------------------------------------------------

# --- vm tier (tests/vm, tools/vm, docs/testing.md) ----------------------------------------------
# `make test-vm': real microVM guests; the guest (a Debian cloud kernel fetched with apt-get
# download, a busybox initramfs) is built into build/vm/ on first use and cached. `make test'
# runs the tier too when QEMU and busybox-static are installed (tools/deps.sh installs them).
.PHONY: test-vm vm-image
vm-image:
	$(Q)tools/vm/build-image.sh $(BUILD)/vm

test-vm: deps all vm-image
	$(Q)tests/run.sh vm
# --- end of vm tier -----------------------------------------------------------------------------

# --- install (docs/operations.md#installing) ----------------------------------------------------
# make install [PREFIX=/usr/local] [DESTDIR=] [CNIDIR=$(PREFIX)/lib/cni]: the daemon, the CLI, the
# CNI plugin (CNIDIR=/usr/lib/cni for Debian's plugin directory), an example config, the systemd
# unit (UNITDIR, with SBINDIR and DOCDIR filled in; docs/systemd.md), the man pages (MANDIR) and the
# bash completion (COMPDIR). The BPF
# programs are inside tapfenced (the skeleton): no object file to install.
PREFIX  ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
BINDIR  ?= $(PREFIX)/bin
CNIDIR  ?= $(PREFIX)/lib/cni
DOCDIR  ?= $(PREFIX)/share/doc/tapfence
UNITDIR ?= $(PREFIX)/lib/systemd/system
MANDIR  ?= $(PREFIX)/share/man
COMPDIR ?= $(PREFIX)/share/bash-completion/completions
.PHONY: install uninstall
install: $(BUILD)/tapfenced $(BUILD)/tapfence $(BUILD)/tapfence-cni man
	$(Q)install -D -m 0755 $(BUILD)/tapfenced $(DESTDIR)$(SBINDIR)/tapfenced
	$(Q)install -D -m 0755 $(BUILD)/tapfence $(DESTDIR)$(BINDIR)/tapfence
	$(Q)install -D -m 0755 $(BUILD)/tapfence-cni $(DESTDIR)$(CNIDIR)/tapfence-cni
	$(Q)install -D -m 0644 docs/examples/tapfence.json $(DESTDIR)$(DOCDIR)/examples/tapfence.json
	$(Q)install -D -m 0644 docs/systemd.md $(DESTDIR)$(DOCDIR)/systemd.md
	$(Q)mkdir -p $(DESTDIR)$(UNITDIR)
	$(Q)sed 's|@SBINDIR@|$(SBINDIR)|g; s|@DOCDIR@|$(DOCDIR)|g' tools/systemd/tapfenced.service \
		>$(DESTDIR)$(UNITDIR)/tapfenced.service
	$(Q)chmod 0644 $(DESTDIR)$(UNITDIR)/tapfenced.service
	$(Q)for m in $(MAN_PAGES); do \
		install -D -m 0644 $(BUILD)/man/$$m $(DESTDIR)$(MANDIR)/man$${m##*.}/$$m || exit; done
	$(Q)install -D -m 0644 tools/completion/tapfence.bash $(DESTDIR)$(COMPDIR)/tapfence

# Removes what install put there; never state, pins or enforcement (tapfenced --cleanup does).
uninstall:
	$(Q)rm -f $(DESTDIR)$(SBINDIR)/tapfenced $(DESTDIR)$(BINDIR)/tapfence \
		$(DESTDIR)$(CNIDIR)/tapfence-cni $(DESTDIR)$(DOCDIR)/examples/tapfence.json \
		$(DESTDIR)$(DOCDIR)/systemd.md $(DESTDIR)$(UNITDIR)/tapfenced.service
	$(Q)for m in $(MAN_PAGES); do rm -f $(DESTDIR)$(MANDIR)/man$${m##*.}/$$m; done
	$(Q)rm -f $(DESTDIR)$(COMPDIR)/tapfence
	$(Q)rmdir $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) 2>/dev/null || true
# --- end of install ------------------------------------------------------------------------------

# --- make deb (docs/packaging.md) -----------------------------------------------------------------
# The Debian package, built by dpkg-buildpackage from the tracked files and tools/deb/debian, into
# $(BUILD)/deb (its own build there, with Debian's hardening flags), then checked by lintian. This
# make's variables stay out of it (MAKEFLAGS would hand the copy our BUILD, and its clean ours).
DEB := $(BUILD)/deb/tapfence_$(VERSION)_amd64.deb
.PHONY: deb
deb:
	$(Q)rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb/tapfence-$(VERSION)
	$(Q)git ls-files -z | xargs -0 cp -p --parents -t $(BUILD)/deb/tapfence-$(VERSION)
	$(Q)cp -pr tools/deb/debian $(BUILD)/deb/tapfence-$(VERSION)/debian
	$(Q)cd $(BUILD)/deb/tapfence-$(VERSION) && \
		env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		DEB_BUILD_OPTIONS="nocheck parallel=$$(nproc)" dpkg-buildpackage -us -uc -b \
		>../build.log 2>&1 || { tail -n 30 ../build.log; exit 1; }
	$(Q)lintian --fail-on error,warning $(DEB)
	@echo "  DEB      $(DEB)"

clean:
	$(call msg,CLEAN,$(BUILD))
	$(Q)rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
