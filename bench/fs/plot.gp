# plot.gp: results/NAME.csv of bench/fs/run.sh as results/NAME.png, two panels: the ratio
# sshfs/ARF per row for each network setting (> 1: ARF faster; a failed row has no bar and
# says so), and the seconds of both per row.  run.sh calls it as
#   gnuplot -e "csv='results/fs.csv'; out='results/fs.png'; ttl='...'" plot.gp
# The CSV has one row per (net, row); empty fields are failed or not applicable.
if (!exists("csv")) csv = 'results/fs.csv'
if (!exists("out")) out = 'results/fs.png'
if (!exists("ttl")) ttl = 'ARF vs sshfs'
set terminal png size 1200,900 noenhanced
set output out
set datafile separator ','
set datafile missing ''
num(c) = strcol(c) eq '' ? NaN : column(c)

stats csv using 2 nooutput
nrows = STATS_max
nets = ''
stats csv using (strcol(1) eq '1gbit' ? 1 : 0) nooutput
if (STATS_sum > 0) nets = nets.'1gbit '
stats csv using (strcol(1) eq 'unlimited' ? 1 : 0) nooutput
if (STATS_sum > 0) nets = nets.'unlimited '
nn = words(nets)

set multiplot layout 2,1 title ttl
set style fill solid 0.85 border -1
set grid ytics
set xrange [0.4:nrows + 0.6]
set logscale y
set key top left Left reverse
bw = 0.8 / nn
set boxwidth bw
off(k) = -0.4 + bw * (k - 0.5)

set title 'sshfs seconds / ARF seconds (> 1: ARF faster; each row on a fresh mount)'
set ylabel 'ratio'
set yrange [0.02:20]
plot for [k=1:nn] csv using ($2 + off(k)):(strcol(1) eq word(nets, k) ? num(6) : NaN) \
	with boxes title word(nets, k), \
     csv every ::1::nrows using 2:(NaN):xtic(3) notitle, \
     for [k=1:nn] csv using ($2 + off(k)):(strcol(1) eq word(nets, k) && strcol(6) eq '' ? 1 : NaN): \
	(strcol(7) ne 'ok' ? 'ARF '.strcol(7) : 'sshfs '.strcol(8)) with labels rotate by 90 left tc rgb 'red' notitle, \
     1 with lines lc rgb 'black' dt 2 notitle

set title 'seconds (log scale)'
set key below horizontal
set ylabel 'seconds'
set yrange [*:*]
bw2 = 0.8 / (2 * nn)
set boxwidth bw2
off2(k, f) = -0.4 + bw2 * (2 * (k - 1) + f - 0.5)
plot for [k=1:nn] csv using ($2 + off2(k, 1)):(strcol(1) eq word(nets, k) ? num(4) : NaN) \
	with boxes lc k title 'ARF '.word(nets, k), \
     csv every ::1::nrows using 2:(NaN):xtic(3) notitle, \
     for [k=1:nn] csv using ($2 + off2(k, 2)):(strcol(1) eq word(nets, k) ? num(5) : NaN) \
	with boxes lc k fs pattern 4 title 'sshfs '.word(nets, k)
unset multiplot
