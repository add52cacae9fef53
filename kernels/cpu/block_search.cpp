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
  const bool won = rate > best_rate_ * kMinGain;
  if (won) {
    best_ = probe_;
    best_rate_ = rate;
  }
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
  probe_ = choice_;
}

}  // namespace mv
