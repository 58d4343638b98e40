# Sourced by the GPU-host scripts (see shared/docs/GPU-HOSTS.md): the Vulkan loader
# from the .debs in .gl/ when the host has none, NVIDIA's ICD, and the Vulkan backend.
if ! ldconfig -p | grep -q libvulkan.so.1 && ls .gl/*.deb >/dev/null 2>&1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
fi
if [ -z "${VK_DRIVER_FILES:-}" ]; then
  icd=$(ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json 2>/dev/null | head -1)
  [ -n "$icd" ] && export VK_DRIVER_FILES=$icd
fi
export GPUSCOPE_BACKEND=${GPUSCOPE_BACKEND:-vulkan}
