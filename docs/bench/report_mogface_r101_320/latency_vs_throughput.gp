set terminal pngcairo size 960,600
set output 'latency_vs_throughput.png'
set title 'Throughput vs latency (open loop, offered-load sweep)'
set xlabel 'achieved throughput (images/s)'
set ylabel 'latency (ms)'
set logscale y
set grid
set key top left
plot 'latency_vs_throughput.dat' index 0 using 1:2 with linespoints lw 2 lc 1 pt 7 title 'naive p50', 'latency_vs_throughput.dat' index 0 using 1:3 with linespoints lw 2 dt 2 lc 1 pt 5 title 'naive p99', \
     'latency_vs_throughput.dat' index 1 using 1:2 with linespoints lw 2 lc 2 pt 7 title 'dynamic p50', 'latency_vs_throughput.dat' index 1 using 1:3 with linespoints lw 2 dt 2 lc 2 pt 5 title 'dynamic p99', \
     'latency_vs_throughput.dat' index 2 using 1:2 with linespoints lw 2 lc 3 pt 7 title 'continuous p50', 'latency_vs_throughput.dat' index 2 using 1:3 with linespoints lw 2 dt 2 lc 3 pt 5 title 'continuous p99', \
     'latency_vs_throughput.dat' index 3 using 1:2 with linespoints lw 2 lc 4 pt 7 title 'adaptive p50', 'latency_vs_throughput.dat' index 3 using 1:3 with linespoints lw 2 dt 2 lc 4 pt 5 title 'adaptive p99'
set terminal svg size 960,600 dynamic
set output 'latency_vs_throughput.svg'
replot
unset output
