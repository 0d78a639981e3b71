// The HPA scales a service out under load.
import { kjson, steadyLoad, waitFor } from './lib.js'
import { INGRESS_HOST, INGRESS_URL, NS, env, fullname } from './context.js'

/** CPU load on product until its HPA has scaled it from 1 replica to 2 or more. */
export async function hpa () {
  const name = fullname('product')
  const replicas = () => kjson(['get', 'hpa', '-n', NS, name]).status
  await waitFor('product at 1 replica with a CPU metric', () => {
    const st = replicas()
    return st.currentReplicas === 1 && st.currentMetrics?.some((m) => m.resource?.current?.averageUtilization !== undefined)
  }, 180, 2000)
  // Well above the target, so that a cheaper request does not make the test miss it: 150 RPS of cached
  // pages took ~71 millicores in a local run, at the 70m target of the 100m request, and an HPA run
  // saw no scale-out in 300 s once the kit's per-request cost fell.
  const load = steadyLoad(INGRESS_URL, { rate: Number(env.E2E_HPA_RATE || 400), targets: [(i) => ({ host: INGRESS_HOST, path: `/products?count=5&page=${1 + (i % 40)}` })] })
  const started = Date.now()
  let scaled
  let seen
  try {
    scaled = await waitFor('the HPA scales product out', () => {
      const st = seen = replicas()
      return st.desiredReplicas >= 2 && st
    }, 300, 1000).catch((err) => {
      throw new Error(`${err.message}; the HPA last saw ${JSON.stringify(seen?.currentMetrics ?? null)}`)
    })
  } finally {
    await load.stop()
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(0)
  await waitFor('the new product pod is Ready', () => kjson(['get', 'deploy', '-n', NS, name]).status.readyReplicas >= 2, 180, 2000)
  const ready = ((Date.now() - started) / 1000).toFixed(0)
  return `product 1 → ${scaled.desiredReplicas} replicas: decided after ${seconds} s of load, second pod Ready after ${ready} s`
}
