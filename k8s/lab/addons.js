#!/usr/bin/env node
// The add-ons on the lab cluster (../shared/k8s/lab), as the e2e installs them: their images built
// here from their Go modules and loaded into the node (k8s/e2e/addon-images.js), the lab's Traefik
// set up as k8s/traefik.yaml sets the chart's, then k8s/install-addons.sh --lab --with-adapter
// --registry with the charts' archives of ../shared/k8s/charts. A second run changes nothing.
//   eval "$(../shared/k8s/lab/cluster.sh up)" && node k8s/lab/addons.js
import { addons } from '../e2e/monitoring.js'
import { provisionFor } from '../../scripts/provision.js'

provisionFor('e2e', 'add-ons') // Go and the pinned tools first: the add-on images are built from Go modules
try {
  console.error(`add-ons: ${await addons()}`)
} catch (err) {
  console.error(`add-ons: ${err.message}`)
  process.exit(1)
}
