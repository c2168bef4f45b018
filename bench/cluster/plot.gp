# bench/cluster/plot.gp: speed-up of N data servers over one (median over the runs, bars
# from the least to the most), per workload, beside the ideal (N) and issue #18's goal
# (2.6x at 3).  gnuplot -e "dat='results/cluster.dat'; out='results/cluster.png'; ttl='...'" plot.gp
# dat: one line per workload and N: workload N median min max
if (!exists("ttl")) ttl = 'ARF on N data servers'
set terminal pngcairo size 900,600 noenhanced
set output out
set title ttl
set xlabel 'data servers'
set ylabel 'speed-up over 1 data server (time(1) / time(N))'
set xrange [0.8:3.2]
set yrange [0:3.5<*]
set xtics 1
set key top left
set grid ytics
plot x lw 1 dt 2 lc rgb '#888888' title 'ideal (N)', \
     '+' using (3):(2.6) with points pt 7 ps 1.5 lc rgb '#cc0000' title 'goal: 2.6 at 3', \
     dat using ($2-0.03):(strcol(1) eq 'write' ? $3 : NaN):4:5 with yerrorlines lw 2 lc rgb '#1f77b4' title 'write', \
     dat using ($2-0.01):(strcol(1) eq 'read' ? $3 : NaN):4:5 with yerrorlines lw 2 lc rgb '#ff7f0e' title 'read', \
     dat using ($2+0.01):(strcol(1) eq 'grep' ? $3 : NaN):4:5 with yerrorlines lw 2 lc rgb '#2ca02c' title 'arf grep (file)', \
     dat using ($2+0.03):(strcol(1) eq 'grep-r' ? $3 : NaN):4:5 with yerrorlines lw 2 lc rgb '#9467bd' title 'arf grep -r (tree)'
