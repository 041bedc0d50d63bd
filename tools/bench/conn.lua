-- SPDX-License-Identifier: GPL-2.0
-- wrk's summary of one run of tools/bench/conn.sh as one JSON line: completed requests, the run's
-- duration (us), the latency percentiles from wrk's histogram (us, first byte of the request
-- written to the whole response read) and its error counts.
done = function(summary, latency, requests)
	local e = summary.errors
	io.write(string.format('{"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"mean_us":%.1f,'
		.. '"max_us":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
		summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.mean,
		latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
