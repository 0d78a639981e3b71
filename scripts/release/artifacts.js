// Where a release's artifacts live in a registry: the images <registry>/suite-<service>:<version>,
// the charts oci://<registry>/charts/<chart>:<version>. One place for the names, so the release and
// its verification agree.
import { spawnSync } from 'node:child_process'

export function artifacts (version, registry) {
  const imageRepo = (s) => `${registry}/suite-${s}`
  const chartRepo = (c) => `${registry}/charts/${c}`
  return {
    version,
    registry,
    // A registry on this machine speaks plain HTTP (the lab's, k8s/registry.yaml).
    plainHttp: /^(localhost|127\.0\.0\.1)(:\d+)?(\/|$)/.test(registry),
    imageRepo,
    image: (s) => `${imageRepo(s)}:${version}`,
    charts: `oci://${registry}/charts`,
    chartRepo,
    chart: (c) => `${chartRepo(c)}:${version}`,
    /** The digest a tag points at now (crane). */
    resolve (ref) {
      const r = spawnSync('crane', ['digest', ...(this.plainHttp ? ['--insecure'] : []), ref], { encoding: 'utf8' })
      if (r.status !== 0) throw new Error(`crane digest ${ref}: ${(r.stderr || r.error?.message || '').trim()}`)
      return r.stdout.trim()
    }
  }
}

/** cosign's options for a registry over plain HTTP. */
export const cosignRegistryArgs = (a) => (a.plainHttp ? ['--allow-http-registry', '--allow-insecure-registry'] : [])
