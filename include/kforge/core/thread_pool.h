// A fixed-size pool of worker threads with a FIFO queue (compiles, LLM calls, untimed work).
//
// Thread-safety: Submit() may be called from any thread. The destructor finishes queued work, then
// joins the workers.
#ifndef KFORGE_CORE_THREAD_POOL_H_
#define KFORGE_CORE_THREAD_POOL_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace kforge {

class ThreadPool {
 public:
  // `threads` == 0 means one per hardware thread.
  explicit ThreadPool(std::size_t threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  template <typename F>
  auto Submit(F&& fn) -> std::future<std::invoke_result_t<F>> {
    using R = std::invoke_result_t<F>;
    auto task = std::make_shared<std::packaged_task<R()>>(std::forward<F>(fn));
    std::future<R> future = task->get_future();
    Enqueue([task] { (*task)(); });
    return future;
  }

  std::size_t size() const { return workers_.size(); }

 private:
  void Enqueue(std::function<void()> job);
  void WorkerLoop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace kforge

#endif  // KFORGE_CORE_THREAD_POOL_H_
