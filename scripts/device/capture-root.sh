#!/usr/bin/env bash
# Captures, on a machine with NVIDIA GPUs, the read-only files gputriage's collectors read, into
# a --root tree: $1/tree (default $OUT/tree), packed as $1/h200-root.tar.gz. Only plain text
# files from a whitelist are copied (never resource*/rom/config blobs, never anything that could
# block). Run as root for /dev/kmsg.
set -u
dest=${1:-$OUT}
tree=$dest/tree
mkdir -p "$tree"
copy() {  # copy FILE into the tree, keeping its path; silently skip unreadable files
  local f=$1
  [ -r "$f" ] || return 0
  mkdir -p "$tree$(dirname "$f")"
  timeout 2 cat "$f" > "$tree$f" 2>/dev/null || rm -f "$tree$f"
}
link() {  # recreate a symlink with the same target text
  local f=$1
  [ -L "$f" ] || return 0
  mkdir -p "$tree$(dirname "$f")"
  ln -sfn "$(readlink "$f")" "$tree$f"
}
for f in /proc/cpuinfo /proc/meminfo /proc/cmdline /proc/uptime /proc/stat /proc/modules /proc/version \
         /proc/sys/kernel/hostname /proc/sys/kernel/osrelease /proc/sys/kernel/version \
         /proc/sys/kernel/dmesg_restrict /etc/os-release /proc/1/cgroup; do copy "$f"; done
copy /proc/self/mountinfo
for f in /proc/driver/nvidia/version /proc/driver/nvidia/params /proc/driver/nvidia/registry; do copy "$f"; done
for d in /proc/driver/nvidia/gpus/*; do
  [ -d "$d" ] || continue
  for f in "$d"/information "$d"/registry; do copy "$f"; done
done
for m in /sys/module/nvidia /sys/module/nvidia_uvm /sys/module/nvidia_drm /sys/module/nvidia_modeset /sys/module/amdgpu; do
  for f in version srcversion initstate; do copy "$m/$f"; done
done
pcifiles="vendor device subsystem_vendor subsystem_device revision class current_link_speed current_link_width max_link_speed max_link_width numa_node local_cpulist resource irq enable aer_dev_correctable aer_dev_nonfatal aer_dev_fatal"
for dev in /sys/bus/pci/devices/*; do
  addr=$(basename "$dev")
  real=$(readlink -f "$dev")
  mkdir -p "$tree/sys/bus/pci/devices"
  # store devices as real directories (tests do not need the /sys/devices hierarchy)
  for f in $pcifiles; do
    [ -r "$dev/$f" ] || continue
    mkdir -p "$tree/sys/bus/pci/devices/$addr"
    timeout 2 cat "$dev/$f" > "$tree/sys/bus/pci/devices/$addr/$f" 2>/dev/null || true
  done
  for l in driver iommu_group; do
    [ -L "$dev/$l" ] && ln -sfn "$(readlink "$dev/$l")" "$tree/sys/bus/pci/devices/$addr/$l"
  done
  echo "$addr -> $real" >> "$dest/pci-topology.txt"
done
mkdir -p "$tree/sys/kernel/iommu_groups"; ls /sys/kernel/iommu_groups > "$dest/iommu-groups.txt" 2>/dev/null
for g in /sys/kernel/iommu_groups/*; do [ -d "$g" ] && mkdir -p "$tree$g"; done
mkdir -p "$tree/sys/class/drm"; ls -la /sys/class/drm > "$dest/drm.txt" 2>&1
mkdir -p "$tree/dev"
dd if=/dev/kmsg iflag=nonblock bs=8192 of="$tree/dev/kmsg" 2>/dev/null || true
# software: dpkg status filtered to GPU stacks, cuda installations, loader path
mkdir -p "$tree/var/lib/dpkg"
[ -r /var/lib/dpkg/status ] && cp /var/lib/dpkg/status "$tree/var/lib/dpkg/status"
for c in /usr/local/cuda*; do
  [ -e "$c" ] || continue
  if [ -L "$c" ]; then link "$c"; else copy "$c/version.json"; copy "$c/version.txt"; fi
done
ldconfig -p > "$dest/ldconfig-p.txt" 2>&1
{ echo "== uname"; uname -a; echo "== nvidia-smi -L"; nvidia-smi -L; echo "== which"; which python3 nvcc nvidia-smi compute-sanitizer cuda-gdb dmesg ldd; echo "== glibc"; ldd --version | head -1;
  echo "== torch"; python3 -c 'import torch,os; print(torch.__version__, torch.version.cuda, os.path.dirname(torch.__file__))';
  echo "== site"; python3 -c 'import site,sys; print(site.getsitepackages(), sys.path)';
  echo "== libs"; ls -la /usr/lib/x86_64-linux-gnu/ | grep -E 'nvidia|cuda|libpci|libre2|libfmt|libyaml|libsqlite' ; } > "$dest/machine-info.txt" 2>&1
tar -C "$tree" -czf "$dest/h200-root.tar.gz" . && rm -rf "$tree"
echo "capture done: $(du -h "$dest/h200-root.tar.gz" | cut -f1)"
