#include "dispatcher/policy.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

namespace sdpa::dispatcher {
namespace {

std::mutex g_mutex;
std::optional<Policy> g_default;  // guarded by g_mutex; nullopt = read the environment

thread_local std::optional<Policy> t_scope;  // this thread's innermost scope

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string> dedupe(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

}  // namespace

const char* policy_model_name(PolicyModel m) {
  return m == PolicyModel::pytorch ? "pytorch" : "suite";
}

PolicyModel parse_policy_model(std::string_view name) {
  if (name == "suite") return PolicyModel::suite;
  if (name == "pytorch") return PolicyModel::pytorch;
  throw std::invalid_argument("unknown policy '" + std::string(name) + "' (known: suite, pytorch)");
}

Policy policy_from_backends_env(std::string_view value) {
  Policy p;
  const std::string_view v = trim(value);
  if (v.empty() || v == "all") return p;
  if (v == "none") {
    p.enabled = std::vector<std::string>{};
    return p;
  }
  std::vector<std::string> names;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= v.size(); ++i) {
    if (i == v.size() || v[i] == ',') {
      const std::string_view name = trim(v.substr(start, i - start));
      if (name.empty()) {
        throw std::invalid_argument(std::string(kBackendsEnv) + ": empty backend name in '" +
                                    std::string(value) + "'");
      }
      names.emplace_back(name);
      start = i + 1;
    }
  }
  names = dedupe(names);
  p.enabled = names;
  p.priority = names;
  return p;
}

Policy default_policy() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_default) {
    const char* env = std::getenv(kBackendsEnv);
    g_default = policy_from_backends_env(env ? env : "");  // throws: stays unset
  }
  return *g_default;
}

void set_default_policy(Policy policy) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_default = std::move(policy);
}

void reload_default_policy() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_default.reset();
}

Policy current_policy() { return t_scope ? *t_scope : default_policy(); }

ScopedBackends::ScopedBackends(const std::vector<std::string>& backends, bool set_priority) {
  Policy next = current_policy();  // may throw: then nothing was changed
  const std::vector<std::string> names = dedupe(backends);
  next.enabled = names;
  if (set_priority) {
    std::vector<std::string> priority = names;
    for (const auto& n : next.priority) {
      if (std::find(priority.begin(), priority.end(), n) == priority.end()) priority.push_back(n);
    }
    next.priority = std::move(priority);
  }
  saved_ = t_scope;
  t_scope = std::move(next);
}

ScopedBackends::ScopedBackends(Policy policy) {
  saved_ = t_scope;
  t_scope = std::move(policy);
}

ScopedBackends::~ScopedBackends() { t_scope = std::move(saved_); }

}  // namespace sdpa::dispatcher
