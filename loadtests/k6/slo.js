// The SLOs every scenario is held to (P95_MS, P99_MS, ERROR_RATE override them in a run): p95 and p99
// latency, failed requests, and the share of requests that did not leave on time — dropped by k6, or
// sent by the local runner more than maxLateMs (LATE_MS) after their planned time and after the next
// request's. scenarios.js holds them to it; the umbrella chart's SLO alerts take their defaults from it
// (npm run generate), so this module imports nothing.
export const SLO = { p95Ms: 100, p99Ms: 250, errorRate: 0.01, maxDropped: 0.01, maxLateMs: 100 }
