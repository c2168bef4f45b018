# plot.gp: results/rdma.csv as results/rdma.png: each row's ratio pn/perftest (median over the
# run's repetitions, with the lowest..highest per-repetition ratio as an error bar), latency
# rows and bandwidth rows in two panels (the first four rows are
# latency rows: bench_rdma.c lists them first).  Run by `make -C bench/rdma plot` from bench/rdma.
set terminal png size 1200,600 noenhanced
set output 'results/rdma.png'
set datafile separator ','
csv = 'results/rdma.csv'
lat(u) = strcol(3) eq 'us'
label = 'strcol(1)." ".(strcol(2)+0 >= 1048576 ? sprintf("%d MiB", strcol(2)/1048576) : sprintf("%d B", strcol(2)+0))."\nvs ".strcol(4)'
set multiplot layout 1,2 title 'Paradis-Net rdma: vs perftest, same guest boot (Soft-RoCE under QEMU): ratios only'
set style fill solid 0.8 border -1
set boxwidth 0.6
set grid y
set key off
set xtics rotate by -30 font ',9'

set title 'latency: pn / perftest (round trip, median; above 1 = pn slower)'
set logscale y
set ylabel 'ratio'
set xrange [-0.5:3.5]
plot csv every ::1 using 0:(lat(0) ? $8 : 1/0):xtic(lat(0) ? @label : "") with boxes lc rgb '#aa4444', \
     csv every ::1 using 0:(lat(0) ? $8 : 1/0):(lat(0) ? $9 : 1/0):(lat(0) ? $10 : 1/0) \
         with yerrorbars lc rgb 'black' pt -1, \
     1 with lines lc rgb 'black' dt 2

set title 'bandwidth: pn / perftest (MB/s; below 1 = pn slower)'
unset logscale y
set yrange [0:*]
set xrange [3.5:*]
plot csv every ::1 using 0:(lat(0) ? 1/0 : $8):xtic(lat(0) ? "" : @label) with boxes lc rgb '#4477aa', \
     csv every ::1 using 0:(lat(0) ? 1/0 : $8):(lat(0) ? 1/0 : $9):(lat(0) ? 1/0 : $10) \
         with yerrorbars lc rgb 'black' pt -1, \
     1 with lines lc rgb 'black' dt 2
unset multiplot
