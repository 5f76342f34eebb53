set terminal pngcairo size 960,600
set output 'batch_sizes.png'
set title 'Time per image vs batch size (32 images per row)'
set xlabel 'batch size'
set ylabel 'ms per image'
set logscale x 2
set yrange [0:*]
set grid
plot 'batch_sizes.dat' index 0 using 1:2 with linespoints lw 2 pt 7 title 'fp32', 'batch_sizes.dat' index 1 using 1:2 with linespoints lw 2 pt 7 title 'bf16'
set terminal svg size 960,600 dynamic
set output 'batch_sizes.svg'
replot
unset output
