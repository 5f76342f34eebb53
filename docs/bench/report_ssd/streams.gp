set terminal pngcairo size 960,600
set output 'streams.png'
set title '25 FPS camera streams (latest-only): frame latency p99'
set xlabel 'concurrent streams'
set ylabel 'p99 latency (ms)'
set xtics 1
set yrange [0:*]
set grid
plot 'streams.dat' index 0 using 1:2 with linespoints lw 2 pt 7 title 'naive p99', 'streams.dat' index 1 using 1:2 with linespoints lw 2 pt 7 title 'dynamic p99', 'streams.dat' index 2 using 1:2 with linespoints lw 2 pt 7 title 'continuous p99', 'streams.dat' index 3 using 1:2 with linespoints lw 2 pt 7 title 'adaptive p99', 200 with lines lc rgb 'red' dt 3 title '200 ms deadline'
set terminal svg size 960,600 dynamic
set output 'streams.svg'
replot
unset output
