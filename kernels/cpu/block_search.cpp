#include "kernels/cpu/block_search.hpp"

#include <algorithm>

namespace mv {

void BlockSearch::measured(double rate, int64_t running) {
  const int64_t most = std::max<int64_t>(running, 1);
  if (direction_ == 0) {
    choice_ = std::min(probe_, most);
    best_ = choice_;
    best_rate_ = rate;
    if (choice_ < most) {
      direction_ = 1;
      probe_ = std::min(choice_ * kFactor, most);
    } else if (choice_ > 1) {
      direction_ = -1;
      probe_ = std::max<int64_t>(choice_ / kFactor, 1);
    } else {
      finish();
    }
    return;
  }
  if (!recheck_) {
    probe_rate_ = rate;
    recheck_ = true;
    return;
  }
  recheck_ = false;
  const double reference = (best_rate_ + rate) / 2;
  const bool won = probe_rate_ > reference * kMinGain;
  best_rate_ = won ? probe_rate_ : reference;
  if (won) best_ = probe_;
  if (direction_ > 0) {
    if (won && probe_ < most) {
      probe_ = std::min(probe_ * kFactor, most);
    } else if (!won && best_ == choice_ && choice_ > 1) {
      direction_ = -1;
      probe_ = std::max<int64_t>(choice_ / kFactor, 1);
    } else {
      finish();
    }
    return;
  }
  if (won && probe_ > 1) {
    probe_ = std::max<int64_t>(probe_ / kFactor, 1);
  } else {
    finish();
  }
}

void BlockSearch::finish() {
  const bool again = period_ > 0 && (best_ == 1) == (choice_ == 1);
  period_ = again ? std::min(2 * period_, kMaxPeriod) : kPeriod;
  choice_ = best_;
  measuring_ = false;
}

void BlockSearch::searchAgain() {
  measuring_ = true;
  direction_ = 0;
  recheck_ = false;
  probe_ = choice_;
}

void BlockSearch::used(double rate) {
  if (rate > best_rate_ * kDrift || rate * kDrift < best_rate_) searchAgain();
}

}  // namespace mv
