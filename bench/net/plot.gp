# plot.gp: results/net.csv as results/net.png, the four AMUDP experiments in four panels:
# ping latency vs depth, throughput vs depth, bulk bandwidth, ping latency vs drop rate (udp).
# Run by `make -C bench/net plot` from bench/net.  The CSV is long-format (one row per backend,
# experiment, variant and parameter); each curve picks its rows with sel(), and NaN marks the
# others as missing so the curve runs on through them.
set terminal png size 1200,900 noenhanced    # noenhanced: '_' in names is not a subscript
set output 'results/net.png'
set datafile separator ','
set datafile missing NaN
csv = 'results/net.csv'
sel(b, e, v) = strcol(1) eq b && strcol(2) eq e && strcol(3) eq v
has(b, e) = strcol(1) eq b && strcol(2) eq e

# Curves of a backend only when it has rows: gnuplot gives up on a plot with no points.
stats csv using (has("udp", "depth") ? 1 : 0) nooutput
udp = STATS_sum > 0
stats csv using (has("udp", "drop") ? 1 : 0) nooutput
drops = STATS_sum > 0

set multiplot layout 2,2 title 'Paradis-Net on loopback vs raw sockets (pn-inline: PN_INLINE echo handler; pn-worker: opt 0)'
set key top left
set grid
set logscale x 2
set xlabel 'network depth (requests in flight)'

set title 'ping latency (median, 8-byte request/reply)'
set ylabel 'microseconds'
set logscale y
lat(b, v) = sel(b, "depth", v) ? $4 : NaN
if (udp) {
	plot for [v in "raw pn-inline pn-worker"] csv using (lat("tcp", v)):7 w lp title 'tcp '.v, \
	     for [v in "raw pn-inline pn-worker"] csv using (lat("udp", v)):7 w lp dt 2 title 'udp '.v
} else {
	plot for [v in "raw pn-inline pn-worker"] csv using (lat("tcp", v)):7 w lp title 'tcp '.v
}

set title 'throughput'
set ylabel 'thousand requests per second'
unset logscale y
set yrange [0:*]
if (udp) {
	plot for [v in "raw pn-inline pn-worker"] csv using (lat("tcp", v)):($10/1e3) w lp title 'tcp '.v, \
	     for [v in "raw pn-inline pn-worker"] csv using (lat("udp", v)):($10/1e3) w lp dt 2 title 'udp '.v
} else {
	plot for [v in "raw pn-inline pn-worker"] csv using (lat("tcp", v)):($10/1e3) w lp title 'tcp '.v
}

set title 'bulk bandwidth: 8 messages of 128 KiB in flight'
set ylabel 'MB/s'
unset logscale x
unset xlabel
set style fill solid 0.8 border -1
set boxwidth 0.6
set xrange [-0.5:3.5]
set xtics ('tcp: raw TCP' 0, 'tcp: pn' 1, 'udp: raw TCP' 2, 'udp: pn' 3)
set key off
plot csv using (sel("tcp", "bulk", "raw-tcp") ? 0 : sel("tcp", "bulk", "pn-inline") ? 1 : \
                sel("udp", "bulk", "raw-tcp") ? 2 : sel("udp", "bulk", "pn-inline") ? 3 : NaN):11 \
       with boxes lc rgb '#4477aa'

set title 'udp: ping latency vs drop rate (depth 1, dropped at both ends)'
set xtics autofreq
set xrange [-1:31]
set xlabel 'drop rate (%)'
set ylabel 'microseconds'
set key top left
set logscale y
set yrange [*:*]
if (drops) {
	plot csv using (sel("udp", "drop", "pn-inline") ? $4 : NaN):9 with linespoints title 'mean', \
	     csv using (sel("udp", "drop", "pn-inline") ? $4 : NaN):7 with linespoints title 'median', \
	     csv using (sel("udp", "drop", "pn-inline") ? $4 : NaN):8 with linespoints title 'p99'
} else {
	unset logscale y
	set yrange [0:1]
	set label 1 'udp: not available in this build' at graph 0.5, 0.5 center
	plot -1 notitle
}
unset multiplot
