# plot.gp: results/NAME.csv of bench/grep/run.sh as results/NAME.png: the ratios sshfs/arf
# and nfs/arf per row for each network setting (> 1: arf grep faster; the issue's goals 20x
# on the file, 25x on the tree, dashed), then the seconds of every system per row, one panel
# per network setting.  run.sh calls it as
#   gnuplot -e "csv='results/grep.csv'; out='results/grep.png'; ttl='...'" plot.gp
# Columns: 1 net, 2 row_n, 3 row, 7-12 seconds of local arf arf_local arfmnt sshfs nfs,
# 13 sshfs/arf, 14 nfs/arf; empty fields are failed or not applicable.
if (!exists("csv")) csv = 'results/grep.csv'
if (!exists("out")) out = 'results/grep.png'
if (!exists("ttl")) ttl = 'arf grep'
set terminal png size 1200,1200 noenhanced
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

set multiplot layout (1 + nn),1 title ttl
set style fill solid 0.85 border -1
set grid ytics
set xrange [0.4:nrows + 0.6]
set logscale y
set key top left Left reverse

bw = 0.8 / (2 * nn)
set boxwidth bw
off(k, f) = -0.4 + bw * (2 * (k - 1) + f - 0.5)
set key top right
set title 'sshfs s / arf grep s and nfs s / arf grep s (> 1: arf grep faster; dashed: 20x, 25x goals)'
set ylabel 'ratio'
set yrange [0.1:*]
plot for [k=1:nn] csv using ($2 + off(k, 1)):(strcol(1) eq word(nets, k) ? num(13) : NaN) \
	with boxes lc k title 'sshfs/arf '.word(nets, k), \
     for [k=1:nn] csv using ($2 + off(k, 2)):(strcol(1) eq word(nets, k) ? num(14) : NaN) \
	with boxes lc k fs pattern 4 title 'nfs/arf '.word(nets, k), \
     csv every ::1::nrows using 2:(NaN):xtic(3) notitle, \
     1 with lines lc rgb 'black' notitle, \
     20 with lines lc rgb 'black' dt 2 notitle, \
     25 with lines lc rgb 'black' dt 3 notitle

sys = 'local arf arf_local arfmnt sshfs nfs'
ns = words(sys)
bw2 = 0.8 / ns
off2(j) = -0.4 + bw2 * (j - 0.5)
set yrange [*:*]
set ylabel 'seconds'
set key top left
do for [k=1:nn] {
	set title 'seconds, '.word(nets, k).' (log scale; no bar: not run or failed)'
	set boxwidth bw2
	plot for [j=1:ns] csv using ($2 + off2(j)):(strcol(1) eq word(nets, k) ? num(6 + j) : NaN) \
		with boxes lc j title word(sys, j), \
	     csv every ::1::nrows using 2:(NaN):xtic(3) notitle
}
unset multiplot
