// RangeSet: the byte ranges of a file read so far (the C reader, capi/reader.cpp), kept as
// disjoint, sorted intervals, touching ones merged. Whether a range was read, and adding one, cost
// one ordered lookup and the intervals a new range swallows (each swallowed once), so n ranges
// cost O(n log n) however the file places them; a list searched from the start cost n^2 / 2
// comparisons (issue 42 R5: 160,000 named-data keys took 9 to 29 s to fetch).
#ifndef FATPTE_SRC_CAPI_RANGE_SET_HPP_
#define FATPTE_SRC_CAPI_RANGE_SET_HPP_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>

namespace fatpte {
namespace detail {

class RangeSet {
 public:
  // Whether every byte of [start, end) was added; an empty range always was.
  bool contains(std::uint64_t start, std::uint64_t end) const {
    if (end <= start) return true;
    steps_.fetch_add(1, std::memory_order_relaxed);
    auto it = ranges_.upper_bound(start);  // the first interval starting after `start`
    if (it == ranges_.begin()) return false;
    --it;
    return it->first <= start && end <= it->second;
  }

  // Adds [start, end), merging it with the intervals it overlaps or touches.
  void add(std::uint64_t start, std::uint64_t end) {
    if (end <= start) return;
    steps_.fetch_add(1, std::memory_order_relaxed);
    auto it = ranges_.upper_bound(start);
    if (it != ranges_.begin() && std::prev(it)->second >= start) {
      --it;
      start = it->first;
    }
    while (it != ranges_.end() && it->first <= end) {
      steps_.fetch_add(1, std::memory_order_relaxed);
      if (it->second > end) end = it->second;
      it = ranges_.erase(it);
    }
    ranges_.emplace(start, end);
  }

  std::size_t size() const noexcept { return ranges_.size(); }
  // Lookups made and intervals swallowed so far: the work the ranges caused, beyond each
  // lookup's O(log n).
  std::uint64_t steps() const noexcept { return steps_.load(std::memory_order_relaxed); }

 private:
  std::map<std::uint64_t, std::uint64_t> ranges_;  // start -> end, disjoint and not touching
  // Counted by const lookups too, which loads on several threads may make at once (adding is
  // the reader's, one call at a time).
  mutable std::atomic<std::uint64_t> steps_{0};
};

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_CAPI_RANGE_SET_HPP_
