# plot.gp: results/tradeoff.csv as results/tradeoff.png.  Left: median latency of a list walk
# against its length for the three methods; right: hash lookups and the baselines.
# Run by `make -C bench/tradeoff plot` from bench/tradeoff.  Columns: structure, len, method,
# ops, median_us, p99_us, mean_us, ops_per_s, round_trips_per_op.
set terminal png size 1200,500 noenhanced
set output 'results/tradeoff.png'
set datafile separator ','
set datafile missing NaN
csv = 'results/tradeoff.csv'
sel(s, m) = strcol(1) eq s && strcol(3) eq m

set multiplot layout 1,2 title 'Active RDMA on loopback TCP: one-sided reads vs active EXEC vs a fixed server hook (one request at a time)'
set grid
set key top left Left reverse

set title 'linked list walk (median latency)'
set logscale xy
set xlabel 'nodes walked'
set ylabel 'microseconds'
set xrange [0.7:1500]
plot csv using (sel("list", "reads") ? $2 : NaN):5 w lp pt 7 title 'reads: one READ per node', \
     csv using (sel("list", "active") ? $2 : NaN):5 w lp pt 5 title 'active: one EXEC of the walk', \
     csv using (sel("list", "hook") ? $2 : NaN):5 w lp pt 9 title 'hook: one EXEC calling C'

set title 'hash lookup (random keys) and baselines (median latency)'
unset logscale
unset xlabel
set yrange [0:*]
set xrange [-0.5:5.5]
set style fill solid 0.8 border -1
set boxwidth 0.6
set key off
set bmargin 4
set xtics ("hash\nreads" 0, "hash\nactive" 1, "hash\nhook" 2, "null\nEXEC" 3, "8-byte\nREAD" 4, "raw TCP\nping-pong" 5)
plot csv using (sel("hash", "reads") ? 0 : sel("hash", "active") ? 1 : sel("hash", "hook") ? 2 : \
                sel("baseline", "null-exec") ? 3 : sel("baseline", "read8") ? 4 : \
                sel("baseline", "raw-tcp") ? 5 : NaN):5 with boxes lc rgb '#4477aa'
unset multiplot
