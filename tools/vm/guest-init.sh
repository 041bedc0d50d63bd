#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
# The microVM guest's /init (busybox ash): bring up eth0 from the kernel command line, print
# "READY NAME UPTIME" on the console, then run the probes the host sends over the same console.
#
# Kernel command line (tests/vm/lib.sh sets it):
#   tf.name=NAME tf.ip4=ADDR/LEN tf.gw4=ADDR [tf.ip6=ADDR/LEN tf.gw6=ADDR] [tf.serve=PORT]
# tf.serve starts a TCP listener (tfprobe serve) that prints "HIT tcp PORT from PEER" per
# connection, so the host sees from the console whether another guest reached this one.
#
# Protocol, one line each way on the serial console:
#   host -> guest   ID COMMAND...          ID has no spaces; COMMAND is one of the functions below
#   guest -> host   OUT ID TEXT            the command's output, at most 8 lines
#                   PROBE ID rc=N          the command's exit status; always the last line
# The guest's exit status is only its own view: the host judges by what its listeners and the
# event feed saw. Every command is bounded by a timeout here, and the host waits a little longer.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev

# The virtio-net driver and what it needs, in dependency order (modules in the cloud kernel).
for m in virtio_ring virtio virtio_mmio failover net_failover virtio_net; do
	insmod /lib/modules/$m.ko || echo "BOOTFAIL insmod $m"
done
# From here on only warnings and worse reach the console, so they cannot split protocol lines.
dmesg -n 1

tf_name=guest tf_ip4='' tf_gw4='' tf_ip6='' tf_gw6='' tf_serve=''
# shellcheck disable=SC2013 # the command line is words
for w in $(cat /proc/cmdline); do
	case $w in
	tf.name=* | tf.ip4=* | tf.gw4=* | tf.ip6=* | tf.gw6=* | tf.serve=*)
		k=${w%%=*}
		eval "tf_${k#tf.}=\${w#*=}"
		;;
	esac
done

i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
[ -e /sys/class/net/eth0 ] || echo "BOOTFAIL no eth0"

# No DAD (the address is usable at once), no router solicitations: the test configures all.
for k in accept_dad accept_ra router_solicitations; do
	echo 0 >/proc/sys/net/ipv6/conf/default/$k
	echo 0 >/proc/sys/net/ipv6/conf/eth0/$k 2>/dev/null
done
ip link set lo up
ip link set eth0 up
[ -n "$tf_ip4" ] && ip addr add "$tf_ip4" dev eth0 && ip route add default via "$tf_gw4" dev eth0
[ -n "$tf_ip6" ] && ip -6 addr add "$tf_ip6" dev eth0 && ip -6 route add default via "$tf_gw6" dev eth0
[ -n "$tf_serve" ] && tfprobe serve "$tf_serve" &

# --- the probes ---------------------------------------------------------------------------------

# url HOST PORT: an http URL, with brackets for an IPv6 literal.
url() {
	case $1 in
	*:*) echo "http://[$1]:$2/" ;;
	*) echo "http://$1:$2/" ;;
	esac
}

# get HOST PORT: an HTTP GET with busybox wget (its -T can crash: bounded by timeout instead).
get() {
	timeout 3 wget -q -O - "$(url "$1" "$2")"
}

# tcp [-s SRC] HOST PORT, udp [-s SRC] HOST PORT, tls SNI HOST PORT: see tfprobe.c.
tcp() { tfprobe tcp -w 2 "$@"; }
udp() { tfprobe udp -w 2 "$@"; }
tls() { tfprobe tls -w 2 "$@"; }

# dns NAME SERVER: an A query with busybox nslookup; prints "ANSWER ADDR" per address.
dns() {
	timeout 4 nslookup -type=a "$1" "$2" >/tmp/dns.out 2>&1
	# The answers are the Address lines after "Name:" (the first one is the server's).
	awk '/^Name:/ { n = 1 } n && /^Address/ { print "ANSWER " $NF }' /tmp/dns.out | grep . ||
		{ head -n 4 /tmp/dns.out; return 1; }
}

# dnsget NAME SERVER PORT: resolve NAME, then GET its first address.
dnsget() {
	a=$(dns "$1" "$2" | awk '/^ANSWER / { print $2; exit }')
	[ -n "$a" ] || { echo "no answer for $1"; return 1; }
	echo "ANSWER $a"
	get "$a" "$3"
}

# addaddr ADDR/LEN: a second address on eth0 (to send from as a spoofer would).
addaddr() { ip addr add "$1" dev eth0; }

echo "READY $tf_name $(cut -d' ' -f1 /proc/uptime)"

# --- the agent ----------------------------------------------------------------------------------

stty -echo 2>/dev/null
while read -r id cmd; do
	[ -n "$id" ] || continue
	out=$(eval "$cmd" 2>&1 </dev/null)
	rc=$?
	[ -n "$out" ] && echo "$out" | head -n 8 | sed "s/^/OUT $id /"
	echo "PROBE $id rc=$rc"
done
echo "BOOTFAIL the console closed"
poweroff -f
