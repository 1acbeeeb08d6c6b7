tar xJf dist/device.tar.xz -C dist
tl=$(python3 -c 'import torch,os;print(os.path.join(os.path.dirname(torch.__file__),"lib","libtorch_cuda.so"))')
nproc
python3 bench/libs_vs_ldd.py dist/gputriage/bin/gputriage "$tl" 15
tp=$(dirname $tl)/libtorch_python.so
python3 bench/libs_vs_ldd.py dist/gputriage/bin/gputriage "$tp" 9 | head -20
