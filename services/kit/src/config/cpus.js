// The CPUs this process may actually use: the default number of worker threads (WORKERS).
// A container's CPU limit is a cgroup CPU quota (v1: cpu.cfs_quota_us / cpu.cfs_period_us, v2:
// cpu.max), which os.availableParallelism() does not read: it counts the CPUs the process may run
// on (affinity, cpusets), so a pod limited to 1 CPU on a 16-core node would start 16 threads that
// share one CPU's time, each with its own heap, pool and compiled schemas, and a throttled event loop.
import { availableParallelism } from 'node:os'
import { readFileSync } from 'node:fs'

const CGROUP_ROOT = '/sys/fs/cgroup'

/** Whole CPUs this process may use (a quota rounded down), at least 1. */
export function cpuBudget () {
  const quota = cpuQuota()
  const cpus = availableParallelism()
  return quota === null ? cpus : Math.max(1, Math.min(cpus, Math.floor(quota)))
}

/**
 * The smallest CPU quota (in CPUs, e.g. 1.5) of this process's cgroup and of the ancestors it can see,
 * or null when none has one (or this is not Linux).
 */
export function cpuQuota () {
  let lines
  try {
    lines = readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n')
  } catch {
    return null
  }
  const quotas = []
  for (const line of lines) {
    const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line) ?? []
    if (controllers === '') { // v2: one hierarchy, cpu.max is "max 100000" or "<quota> <period>"
      for (const dir of ancestors(CGROUP_ROOT, path)) {
        const [quota, period] = read(`${dir}/cpu.max`)?.split(/\s+/) ?? []
        if (quota && quota !== 'max') quotas.push(Number(quota) / Number(period))
      }
    } else if (controllers?.split(',').includes('cpu')) { // v1: the cpu controller's own hierarchy
      // cpu,cpuacct or its cpu link
      for (const mount of new Set([`${CGROUP_ROOT}/${controllers}`, `${CGROUP_ROOT}/cpu`])) {
        for (const dir of ancestors(mount, path)) {
          const quota = Number(read(`${dir}/cpu.cfs_quota_us`))
          const period = Number(read(`${dir}/cpu.cfs_period_us`))
          if (quota > 0 && period > 0) quotas.push(quota / period)
        }
      }
    }
  }
  const valid = quotas.filter((q) => Number.isFinite(q) && q > 0)
  return valid.length ? Math.min(...valid) : null
}

// `root` + `path` and each parent of it up to `root` (a container sees its own cgroup as the root).
function ancestors (root, path) {
  const parts = path.split('/').filter(Boolean)
  return parts.map((_, i) => `${root}/${parts.slice(0, parts.length - i).join('/')}`).concat(root)
}

function read (file) {
  try {
    return readFileSync(file, 'utf8').trim()
  } catch {
    return undefined
  }
}
