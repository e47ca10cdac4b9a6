//===- ServerInfo.cpp -----------------------------------------------------===//
#include "runtime/server/ServerInfo.h"

#include "runtime/plan/Caches.h"

#include "runtime/support/Strings.h"

#include <cstdio>

namespace volt::server {
namespace {

std::string str(const flatbuffers::String *s) { return s ? s->str() : ""; }

std::string format(const char *fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

} // namespace

std::string describePlan(const serving::Session &session) {
  const plan::Plan &p = session.plan();
  std::string out;
  const auto *m = p.model();
  out += format("  model      %s (%s): %u layers, hidden %u, %u experts (top %u), vocab %u\n",
                session.servedModelName().c_str(), m ? str(m->architecture()).c_str() : "?",
                m ? m->num_layers() : 0, m ? m->hidden_size() : 0, m ? m->num_experts() : 0,
                m ? m->top_k() : 0, m ? m->vocab_size() : 0);
  out += format("  target     %s (%s), tensor_parallel_size %u, %s backend (%s)\n",
                str(p.sku_name()).c_str(), str(p.arch()).c_str(), p.tensor_parallel_size(),
                session.backendName().c_str(), session.backendReason().c_str());
  if (p.ranks())
    for (const plan::Rank *r : *p.ranks()) {
      const plan::CacheGroup *kv = plan::pagedKvGroup(*r);
      uint64_t weights = r->pack() ? r->pack()->bytes() : 0, state = 0;
      if (r->caches())
        for (const plan::CacheGroup *g : *r->caches())
          state += g->kind() == plan::CacheKind::StateSlots ? g->bytes() : 0;
      out += format("  rank %-5u weights %s, activations %s, workspace %s, KV cache %s "
                    "(%u blocks x %u tokens)%s, %s in all\n",
                    r->rank(), formatBytes(weights).c_str(), formatBytes(r->arena_bytes()).c_str(),
                    formatBytes(r->workspace_bytes()).c_str(),
                    formatBytes(kv ? kv->bytes() : 0).c_str(), kv ? kv->num_blocks() : 0,
                    kv ? kv->block_size() : 0,
                    state ? format(", recurrent state %s (%u slots)", formatBytes(state).c_str(),
                                   plan::stateSlotCount(*r))
                                .c_str()
                          : "",
                    formatBytes(r->device_bytes()).c_str());
    }
  if (const auto *l = p.limits())
    out += format("  limits     max_model_len %u, max_num_seqs %u, max_num_batched_tokens %u, "
                  "prefix caching %s\n",
                  l->max_model_len(), l->max_num_seqs(), l->max_num_batched_tokens(),
                  p.enable_prefix_caching() ? "on" : "off");
  out += format("  loaded in  %.3f s\n", session.loadSeconds());
  return out;
}

std::string describeLimits(const ServerOptions &o) {
  std::string out;
  out +=
      format("  server     max_concurrent_requests %d, max_queue_len %d, max_body_bytes %s, "
             "request_timeout %s, shutdown grace %g s\n",
             o.maxConcurrentRequests, o.maxQueueLen, formatBytes(o.maxBodyBytes).c_str(),
             o.requestTimeoutSeconds > 0 ? format("%g s", o.requestTimeoutSeconds).c_str() : "none",
             o.shutdownGraceSeconds);
  out += format("  auth       %s\n", o.apiKey.empty() ? "none (no --api-key)"
                                     : o.authHealthAndMetrics
                                         ? "Bearer key on every endpoint"
                                         : "Bearer key on every endpoint but /health and /metrics");
  return out;
}

} // namespace volt::server
