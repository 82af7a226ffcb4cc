// Timeline semaphores emulated with fences, for Vulkan 1.1 devices without
// VK_KHR_timeline_semaphore (many Android phones). The HAL's semantics stay:
// - a submission waits until every (semaphore, value) it names is reached;
//   one that cannot be submitted yet is held here, and every later one
//   queues behind it, so the queue order (and the device's submit value)
//   stays the order of the calls;
// - a semaphore's value advances when the fence of the submission that
//   signals it has completed (or when the host signals it).
// One queue only: submissions whose waits are met run in order on the GPU,
// so no binary semaphore is needed between them.
// Locking: the device's queue_mutex guards everything here, including each
// emulated semaphore's host_value. Waiting on an in-flight fence holds the
// mutex (that work finishes without any host action); waiting for a host
// signal releases it through the condition variable.
#include <errno.h>
#include <string.h>
#include <time.h>

#include "vulkan_internal.h"

typedef struct kiln_vk_host_submission_t {
  struct kiln_vk_host_submission_t* next;
  uint64_t value;   // the device's submit value
  VkFence fence;    // created when actually submitted
  VkFence user_fence;
  uint32_t wait_count, signal_count, command_buffer_count;
  kiln_hal_semaphore_value_t* waits;    // semaphores retained
  kiln_hal_semaphore_value_t* signals;  // semaphores retained
  VkCommandBuffer* command_buffers;
} kiln_vk_host_submission_t;

typedef struct kiln_vk_host_timeline_t {
  pthread_cond_t changed;  // a host signal or a completion happened
  kiln_vk_host_submission_t* held;  // waits not met yet (FIFO)
  kiln_vk_host_submission_t** held_tail;
  kiln_vk_host_submission_t* in_flight;  // submitted, fence pending (FIFO)
  kiln_vk_host_submission_t** in_flight_tail;
  uint64_t completed_value;  // the device submit value known complete
  // Signalled fences of retired submissions, reset for reuse: creating and
  // destroying a fence per submission costs ~0.25 ms each on some drivers.
  VkFence spare_fences[8];
  uint32_t spare_fence_count;
} kiln_vk_host_timeline_t;

static kiln_vk_semaphore_t* as_semaphore(kiln_hal_semaphore_t* base) {
  return (kiln_vk_semaphore_t*)base;
}

// Keeps a completed submission's fence for the next one when there is room.
static void fence_recycle(kiln_vk_device_t* device, VkFence fence) {
  kiln_vk_host_timeline_t* t = device->host_timeline;
  const uint32_t capacity = sizeof(t->spare_fences) / sizeof(t->spare_fences[0]);
  if (t && t->spare_fence_count < capacity &&
      device->vk.vkGetFenceStatus(device->device, fence) == VK_SUCCESS &&
      device->vk.vkResetFences(device->device, 1, &fence) == VK_SUCCESS) {
    t->spare_fences[t->spare_fence_count++] = fence;
    return;
  }
  device->vk.vkDestroyFence(device->device, fence, NULL);
}

static void submission_free(kiln_vk_device_t* device,
                            kiln_vk_host_submission_t* s) {
  if (s->fence) fence_recycle(device, s->fence);
  for (uint32_t i = 0; i < s->wait_count; ++i) {
    kiln_hal_semaphore_release(s->waits[i].semaphore);
  }
  for (uint32_t i = 0; i < s->signal_count; ++i) {
    kiln_hal_semaphore_release(s->signals[i].semaphore);
  }
  kiln_allocator_free(device->base.allocator, s);
}

static bool waits_met(const kiln_vk_host_submission_t* s) {
  for (uint32_t i = 0; i < s->wait_count; ++i) {
    if (as_semaphore(s->waits[i].semaphore)->host_value < s->waits[i].value) {
      return false;
    }
  }
  return true;
}

// Submits `s` to the queue with a spare or new fence (s->fence stays NULL unless
// the work was submitted), then the caller's fence in an empty submission
// (it signals once all earlier work is done).
static kiln_status_t submit_now(kiln_vk_device_t* device,
                                kiln_vk_host_submission_t* s) {
  kiln_vk_host_timeline_t* t = device->host_timeline;
  VkFence fence = VK_NULL_HANDLE;
  if (t->spare_fence_count) {
    fence = t->spare_fences[--t->spare_fence_count];
  } else {
    VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    KILN_RETURN_IF_ERROR(kiln_vk_result_status(
        device->vk.vkCreateFence(device->device, &fence_info, NULL, &fence),
        "vkCreateFence (submission)"));
  }
  VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = s->command_buffer_count,
      .pCommandBuffers = s->command_buffers,
  };
  VkResult result = device->vk.vkQueueSubmit(device->queue, 1, &submit, fence);
  if (result != VK_SUCCESS) {
    device->vk.vkDestroyFence(device->device, fence, NULL);
    return kiln_vk_result_status(result, "vkQueueSubmit");
  }
  s->fence = fence;
  if (s->user_fence) {
    KILN_RETURN_IF_ERROR(kiln_vk_result_status(
        device->vk.vkQueueSubmit(device->queue, 0, NULL, s->user_fence),
        "vkQueueSubmit (fence)"));
  }
  return kiln_ok_status();
}

// Submits held submissions, in order, while the first one's waits are met.
// A submission that fails to submit signals nothing but still completes (no
// fence), so the device's submit value moves on and nothing waits forever
// for it; the failure goes to whoever made it submittable.
static kiln_status_t flush_held(kiln_vk_device_t* device) {
  kiln_vk_host_timeline_t* t = device->host_timeline;
  kiln_status_t status = kiln_ok_status();
  while (!status && t->held && waits_met(t->held)) {
    kiln_vk_host_submission_t* s = t->held;
    t->held = s->next;
    if (!t->held) t->held_tail = &t->held;
    s->next = NULL;
    status = submit_now(device, s);
    if (status && !s->fence) {  // not submitted: it will signal nothing
      for (uint32_t i = 0; i < s->signal_count; ++i) {
        kiln_hal_semaphore_release(s->signals[i].semaphore);
      }
      s->signal_count = 0;
    }
    *t->in_flight_tail = s;
    t->in_flight_tail = &s->next;
  }
  return status;
}

// Retires in-flight submissions whose fences completed, in order, applying
// their signals; then submits what those signals unblocked.
static kiln_status_t poll_completed(kiln_vk_device_t* device) {
  kiln_vk_host_timeline_t* t = device->host_timeline;
  bool progressed = false;
  while (t->in_flight) {
    kiln_vk_host_submission_t* s = t->in_flight;
    if (s->fence) {  // none: a failed submission, done at once
      VkResult result = device->vk.vkGetFenceStatus(device->device, s->fence);
      if (result == VK_NOT_READY) break;
      KILN_RETURN_IF_ERROR(kiln_vk_result_status(result, "vkGetFenceStatus"));
    }
    for (uint32_t i = 0; i < s->signal_count; ++i) {
      kiln_vk_semaphore_t* semaphore = as_semaphore(s->signals[i].semaphore);
      if (semaphore->host_value < s->signals[i].value) {
        semaphore->host_value = s->signals[i].value;
      }
    }
    t->completed_value = s->value;
    t->in_flight = s->next;
    if (!t->in_flight) t->in_flight_tail = &t->in_flight;
    submission_free(device, s);
    progressed = true;
  }
  if (!progressed) return kiln_ok_status();
  pthread_cond_broadcast(&t->changed);
  return flush_held(device);
}

typedef bool (*reached_fn)(kiln_vk_device_t* device, const void* target);

// Waits (queue_mutex held) until `reached` holds; *out_timed_out (and OK)
// when the deadline passes first, so callers name what was awaited.
static kiln_status_t wait_until(kiln_vk_device_t* device, reached_fn reached,
                                const void* target, int64_t timeout_ns,
                                bool* out_timed_out) {
  *out_timed_out = false;
  kiln_vk_host_timeline_t* t = device->host_timeline;
  int64_t deadline = kiln_deadline_from_timeout_ns(timeout_ns);
  for (;;) {
    KILN_RETURN_IF_ERROR(poll_completed(device));
    if (reached(device, target)) return kiln_ok_status();
    int64_t remaining = kiln_deadline_remaining_ns(deadline);
    if (remaining == 0) {
      *out_timed_out = true;
      return kiln_ok_status();
    }
    if (t->in_flight) {
      // GPU work in flight finishes on its own: wait for the oldest.
      VkResult result = device->vk.vkWaitForFences(
          device->device, 1, &t->in_flight->fence, VK_TRUE,
          kiln_vk_timeout_to_vulkan(remaining));
      if (result != VK_TIMEOUT) {
        KILN_RETURN_IF_ERROR(kiln_vk_result_status(result, "vkWaitForFences"));
      }
      continue;
    }
    // Only a host signal (from another thread) can make progress now.
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    int64_t step = remaining < 100000000 ? remaining : 100000000;
    until.tv_sec += (time_t)(step / 1000000000);
    until.tv_nsec += (long)(step % 1000000000);
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec += 1;
      until.tv_nsec -= 1000000000;
    }
    int rc = pthread_cond_timedwait(&t->changed, &device->queue_mutex, &until);
    if (rc != 0 && rc != ETIMEDOUT) {
      return kiln_make_status(KILN_STATUS_INTERNAL,
                              "pthread_cond_timedwait failed (%d)", rc);
    }
  }
}

kiln_status_t kiln_vk_host_timeline_create(kiln_vk_device_t* device) {
  kiln_vk_host_timeline_t* t = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc(device->base.allocator, sizeof(*t), (void**)&t));
  pthread_cond_init(&t->changed, NULL);
  t->held_tail = &t->held;
  t->in_flight_tail = &t->in_flight;
  device->host_timeline = t;
  return kiln_ok_status();
}

// Called after vkDeviceWaitIdle: in-flight work is done; held work (waiting
// for a signal that never came) is dropped.
void kiln_vk_host_timeline_destroy(kiln_vk_device_t* device) {
  kiln_vk_host_timeline_t* t = device->host_timeline;
  if (!t) return;
  kiln_vk_host_submission_t* lists[2] = {t->in_flight, t->held};
  for (int i = 0; i < 2; ++i) {
    while (lists[i]) {
      kiln_vk_host_submission_t* next = lists[i]->next;
      submission_free(device, lists[i]);
      lists[i] = next;
    }
  }
  for (uint32_t i = 0; i < t->spare_fence_count; ++i) {
    device->vk.vkDestroyFence(device->device, t->spare_fences[i], NULL);
  }
  pthread_cond_destroy(&t->changed);
  kiln_allocator_free(device->base.allocator, t);
  device->host_timeline = NULL;
}

kiln_status_t kiln_vk_host_submit(kiln_vk_device_t* device,
                                  const kiln_hal_semaphore_value_t* waits,
                                  uint32_t wait_count,
                                  const VkCommandBuffer* command_buffers,
                                  uint32_t command_buffer_count,
                                  const kiln_hal_semaphore_value_t* signals,
                                  uint32_t signal_count, VkFence fence,
                                  uint64_t* out_value) {
  // One allocation: the record, then its three arrays (the callers bound the
  // counts by kMaxSubmitItems).
  size_t size = sizeof(kiln_vk_host_submission_t) +
                (wait_count + signal_count) * sizeof(kiln_hal_semaphore_value_t) +
                command_buffer_count * sizeof(VkCommandBuffer);
  kiln_vk_host_submission_t* s = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc(device->base.allocator, size, (void**)&s));
  s->waits = (kiln_hal_semaphore_value_t*)(s + 1);
  s->signals = s->waits + wait_count;
  s->command_buffers = (VkCommandBuffer*)(s->signals + signal_count);
  s->wait_count = wait_count;
  s->signal_count = signal_count;
  s->command_buffer_count = command_buffer_count;
  s->user_fence = fence;
  for (uint32_t i = 0; i < wait_count; ++i) {
    s->waits[i] = waits[i];
    kiln_hal_semaphore_retain(waits[i].semaphore);
  }
  for (uint32_t i = 0; i < signal_count; ++i) {
    s->signals[i] = signals[i];
    kiln_hal_semaphore_retain(signals[i].semaphore);
  }
  if (command_buffer_count) {
    memcpy(s->command_buffers, command_buffers,
           command_buffer_count * sizeof(VkCommandBuffer));
  }
  kiln_vk_host_timeline_t* t = device->host_timeline;
  pthread_mutex_lock(&device->queue_mutex);
  s->value = ++device->submit_value;
  *out_value = s->value;
  *t->held_tail = s;
  t->held_tail = &s->next;
  kiln_status_t status = poll_completed(device);
  if (!status) status = flush_held(device);
  pthread_mutex_unlock(&device->queue_mutex);
  return status;
}

static bool device_value_reached(kiln_vk_device_t* device, const void* target) {
  return device->host_timeline->completed_value >= *(const uint64_t*)target;
}

kiln_status_t kiln_vk_host_wait_value(kiln_vk_device_t* device, uint64_t value,
                                      int64_t timeout_ns) {
  bool timed_out = false;
  pthread_mutex_lock(&device->queue_mutex);
  kiln_status_t status =
      wait_until(device, device_value_reached, &value, timeout_ns, &timed_out);
  pthread_mutex_unlock(&device->queue_mutex);
  if (!status && timed_out) {
    return kiln_make_status(KILN_STATUS_DEADLINE_EXCEEDED,
                            "device '%s': work did not finish within %lld ns",
                            device->base.info.name, (long long)timeout_ns);
  }
  return status;
}

kiln_status_t kiln_vk_host_semaphore_query(kiln_vk_semaphore_t* semaphore,
                                           uint64_t* out_value) {
  kiln_vk_device_t* device = kiln_vk_device_cast(semaphore->base.device);
  pthread_mutex_lock(&device->queue_mutex);
  kiln_status_t status = poll_completed(device);
  *out_value = semaphore->host_value;
  pthread_mutex_unlock(&device->queue_mutex);
  return status;
}

kiln_status_t kiln_vk_host_semaphore_signal(kiln_vk_semaphore_t* semaphore,
                                            uint64_t value) {
  kiln_vk_device_t* device = kiln_vk_device_cast(semaphore->base.device);
  pthread_mutex_lock(&device->queue_mutex);
  if (semaphore->host_value < value) semaphore->host_value = value;
  pthread_cond_broadcast(&device->host_timeline->changed);
  kiln_status_t status = flush_held(device);
  pthread_mutex_unlock(&device->queue_mutex);
  return status;
}

typedef struct {
  const kiln_vk_semaphore_t* semaphore;
  uint64_t value;
} semaphore_target_t;

static bool semaphore_reached(kiln_vk_device_t* device, const void* target) {
  (void)device;
  const semaphore_target_t* want = target;
  return want->semaphore->host_value >= want->value;
}

kiln_status_t kiln_vk_host_semaphore_wait(kiln_vk_semaphore_t* semaphore,
                                          uint64_t value, int64_t timeout_ns) {
  kiln_vk_device_t* device = kiln_vk_device_cast(semaphore->base.device);
  semaphore_target_t target = {semaphore, value};
  bool timed_out = false;
  pthread_mutex_lock(&device->queue_mutex);
  kiln_status_t status =
      wait_until(device, semaphore_reached, &target, timeout_ns, &timed_out);
  pthread_mutex_unlock(&device->queue_mutex);
  if (!status && timed_out) {
    return kiln_make_status(KILN_STATUS_DEADLINE_EXCEEDED,
                            "semaphore did not reach %llu within %lld ns",
                            (unsigned long long)value, (long long)timeout_ns);
  }
  return status;
}
