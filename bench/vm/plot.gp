# plot.gp: results/vm.csv as bars of time relative to gcc -O2 (log scale), one per kernel.
# Run by `make -C bench/vm plot` from bench/vm.  Columns 6 and 7: interp_over_native,
# jit_over_native (an all-empty column would make gnuplot give up on the whole plot).
set terminal png size 800,450 noenhanced    # noenhanced: '_' in names is not a subscript
set output 'results/vm.png'
set datafile separator ','
set key autotitle columnhead
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set yrange [0.1:*]                # ratios below 1 happen (findb beats a bytewise C loop)
set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 2   # native = 1
set ylabel 'time / native time (gcc -O2)'
set title 'Active RDMA VM: interpreter and JIT vs native'
plot 'results/vm.csv' using 6:xtic(1) title 'interpreter', '' using 7 title 'JIT'
