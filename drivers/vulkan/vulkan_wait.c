// Fence and submit-timeline waits. A blocking driver wait costs the
// thread's wake-up after the GPU finishes: on an H100 (2026-11-24) a warm
// call's wall time minus its GPU time was 0.08-0.17 ms blocking and
// 0.03-0.05 ms spinning (MobileNetV2, ResNet-18, BERT-base). So by default
// (wait=auto) a GPU's waits spin on the status for up to
// KILN_VK_AUTO_SPIN_NS, which covers a batch-1 inference call; a CPU
// device (lavapipe) blocks at once, as spinning would take a core from the
// device's own threads.
// A wait past the spin paid the wake-up again (ResNet-50 batch 32: 0.28 ms
// of a 7.0 ms call). Calls of a model take about as long each time, so
// such a wait sleeps in the driver until shortly before the last long
// wait's length (kiln_vk_wait_sleep_ns), spins again, and only then blocks
// for the rest: the thread is awake when the GPU finishes, and spins for
// the tail of the call, not all of it. H100, alternating A/B runs: f16
// ResNet-50 batch 32 7.03 -> 6.90 ms a call, fp32 14.60 -> 14.49.
#include "vulkan_internal.h"

#include "kiln/base/time.h"

#define KILN_VK_AUTO_SPIN_NS 5000000  // 5 ms
// How early a long wait wakes before the last one's length: the timer's
// wake-up and the calls' spread.
#define KILN_VK_WAKE_MARGIN_NS 300000  // 0.3 ms

int64_t kiln_vk_wait_sleep_ns(int64_t last_long_ns, int64_t elapsed_ns) {
  if (last_long_ns <= 0) return 0;
  const int64_t wake = last_long_ns - last_long_ns / 16 - KILN_VK_WAKE_MARGIN_NS;
  return wake > elapsed_ns ? wake - elapsed_ns : 0;
}

int64_t kiln_vk_wait_spin_ns(kiln_vk_wait_mode_t mode, bool cpu_device) {
  switch (mode) {
    case KILN_VK_WAIT_POLL:
      return KILN_INFINITE_TIMEOUT_NS;
    case KILN_VK_WAIT_BLOCK:
      return 0;
    case KILN_VK_WAIT_AUTO:
    default:
      return cpu_device ? 0 : KILN_VK_AUTO_SPIN_NS;
  }
}

// VK_SUCCESS once reached, VK_NOT_READY before, or an error.
static VkResult kiln_vk_wait_status(kiln_vk_device_t* device, VkFence fence, uint64_t value) {
  if (fence != VK_NULL_HANDLE) return device->vk.vkGetFenceStatus(device->device, fence);
  uint64_t reached = 0;
  VkResult result =
      device->get_semaphore_counter_value(device->device, device->submit_timeline, &reached);
  return result != VK_SUCCESS ? result : reached >= value ? VK_SUCCESS : VK_NOT_READY;
}

// The driver's blocking wait, up to `timeout_ns`.
static VkResult kiln_vk_wait_block(kiln_vk_device_t* device, VkFence fence, uint64_t value,
                                   int64_t timeout_ns) {
  const uint64_t timeout = kiln_vk_timeout_to_vulkan(timeout_ns);
  if (fence != VK_NULL_HANDLE) {
    return device->vk.vkWaitForFences(device->device, 1, &fence, VK_TRUE, timeout);
  }
  VkSemaphoreWaitInfo wait = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
      .semaphoreCount = 1,
      .pSemaphores = &device->submit_timeline,
      .pValues = &value,
  };
  return device->wait_semaphores(device->device, &wait, timeout);
}

// Spins on the status until `deadline` (VK_NOT_READY when it passes).
static VkResult kiln_vk_wait_spin(kiln_vk_device_t* device, VkFence fence, uint64_t value,
                                  int64_t deadline) {
  for (;;) {
    VkResult result = kiln_vk_wait_status(device, fence, value);
    if (result != VK_NOT_READY || kiln_deadline_remaining_ns(deadline) == 0) return result;
  }
}

static int64_t kiln_vk_min_ns(int64_t a, int64_t b) { return a < b ? a : b; }

// After the first spin of a wait that outlasted it: asleep until shortly
// before the last long wait's length, awake (spinning) through its end,
// then asleep for the rest. VK_NOT_READY never comes back: a wait that
// reaches its deadline is VK_TIMEOUT.
static VkResult kiln_vk_wait_long(kiln_vk_device_t* device, VkFence fence, uint64_t value,
                                  int64_t start, int64_t deadline) {
  const int64_t sleep = kiln_vk_wait_sleep_ns(
      __atomic_load_n(&device->last_long_wait_ns, __ATOMIC_RELAXED), kiln_time_now_ns() - start);
  if (sleep > 0) {
    VkResult result = kiln_vk_wait_block(
        device, fence, value, kiln_vk_min_ns(sleep, kiln_deadline_remaining_ns(deadline)));
    if (result != VK_TIMEOUT) return result;
    const int64_t left = kiln_deadline_remaining_ns(deadline);
    if (left == 0) return VK_TIMEOUT;
    const int64_t spin_end = kiln_deadline_from_timeout_ns(kiln_vk_min_ns(device->spin_ns, left));
    result = kiln_vk_wait_spin(device, fence, value, spin_end);
    if (result != VK_NOT_READY) return result;
    if (kiln_deadline_remaining_ns(deadline) == 0) return VK_TIMEOUT;
  }
  return kiln_vk_wait_block(device, fence, value, kiln_deadline_remaining_ns(deadline));
}

VkResult kiln_vk_wait(kiln_vk_device_t* device, VkFence fence, uint64_t value,
                      int64_t timeout_ns) {
  const int64_t start = kiln_time_now_ns();
  const int64_t deadline = kiln_deadline_from_timeout_ns(timeout_ns);
  if (device->spin_ns <= 0) {
    return kiln_vk_wait_block(device, fence, value, kiln_deadline_remaining_ns(deadline));
  }
  const int64_t spin_end =
      kiln_deadline_from_timeout_ns(kiln_vk_min_ns(device->spin_ns, timeout_ns));
  VkResult result = kiln_vk_wait_spin(device, fence, value, spin_end);
  if (result != VK_NOT_READY) return result;
  if (kiln_deadline_remaining_ns(deadline) == 0) return VK_TIMEOUT;
  result = kiln_vk_wait_long(device, fence, value, start, deadline);
  if (result == VK_SUCCESS) {
    __atomic_store_n(&device->last_long_wait_ns, kiln_time_now_ns() - start, __ATOMIC_RELAXED);
  }
  return result;
}
