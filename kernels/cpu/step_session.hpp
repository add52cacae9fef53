/**
 * @file step_session.hpp
 * A world run chunk by chunk on one backend. A device backend keeps the world in its own
 * memory for the whole session and copies back only what the host asks for, so the host
 * loop that drives a batch says what it reads: after `run`, the view's counters, the
 * clocks and the configuration rows are current on the host; a table is current after
 * `syncTable`, everything after `syncHost`. A table the host changes between chunks is
 * handed back with `pushTable`. On the CPU backend the host world is the world, and every
 * sync is free.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "kernels/cpu/cpu_executor.hpp"

namespace mv {

/// Bytes a session moved between the host and a device (all zero on the CPU).
struct TransferStats {
  int64_t bytes_up = 0;    ///< host to device, view included
  int64_t bytes_down = 0;  ///< device to host, view included
  int64_t full_uploads = 0;  ///< times every buffer of the world was uploaded
};

template <class WorldT>
class StepSession {
 public:
  explicit StepSession(WorldT& world) : world_(world) {}
  virtual ~StepSession() = default;
  StepSession(const StepSession&) = delete;
  StepSession& operator=(const StepSession&) = delete;

  /// Runs up to `max_steps` steps. Afterwards the host's view, clocks and configuration
  /// rows are current; other buffers only after a sync.
  virtual RunReport run(int64_t max_steps) = 0;
  /// Makes every buffer of the host world current.
  void syncHost() { syncFields(0, sizeof(typename WorldT::View)); }
  /// Makes table A current on the host.
  template <class A>
  void syncTable() {
    const auto [lo, hi] = world_.template tableSpan<A>();
    syncFields(lo, hi);
  }
  /// Hands table A, changed by the host since the last run, back to the backend.
  template <class A>
  void pushTable() {
    const auto [lo, hi] = world_.template tableSpan<A>();
    pushFields(lo, hi);
  }
  virtual TransferStats transfers() const { return {}; }
  WorldT& world() { return world_; }

 protected:
  /// Makes current the buffers whose pointer fields lie in bytes [lo, hi) of the view.
  virtual void syncFields(std::size_t lo, std::size_t hi) = 0;
  /// Hands back the buffers whose pointer fields lie in bytes [lo, hi) of the view.
  virtual void pushFields(std::size_t lo, std::size_t hi) = 0;

 private:
  WorldT& world_;
};

/// The CPU backend's session: the executor runs the host world itself.
template <class G, class WorldT>
class CpuStepSession final : public StepSession<WorldT> {
 public:
  CpuStepSession(const CpuExecutor& exec, WorldT& world) : StepSession<WorldT>(world), exec_(exec) {}
  RunReport run(int64_t max_steps) override { return exec_.run<G>(this->world().view(), max_steps); }

 protected:
  void syncFields(std::size_t, std::size_t) override {}
  void pushFields(std::size_t, std::size_t) override {}

 private:
  const CpuExecutor& exec_;
};

/// Opens a session on `world`: through `device` (a factory of device sessions) when it is
/// set, else on `exec`, which must outlive the session.
template <class G, class WorldT, class DeviceFactory>
std::unique_ptr<StepSession<WorldT>> openStepSession(const DeviceFactory& device, const CpuExecutor& exec,
                                                     WorldT& world) {
  if (device) return device(world);
  return std::make_unique<CpuStepSession<G, WorldT>>(exec, world);
}

/// Runs a session until every experiment is done, an error, or a call that makes no step,
/// `chunk` steps per call; leaves the host world current. The report sums the steps.
template <class WorldT>
RunReport runSessionToEnd(StepSession<WorldT>& session, int64_t chunk) {
  int64_t steps = 0;
  RunReport r;
  do {
    r = session.run(chunk);
    steps += r.steps;
  } while (!r.finished && r.steps > 0 && r.status == 0u);
  session.syncHost();
  r.steps = steps;
  return r;
}

}  // namespace mv
