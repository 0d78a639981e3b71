// The product service, as the kit runs it: name, migrations and routes.
import manifest from '../package.json' with { type: 'json' }
import routes from './routes.js'

export default {
  name: 'product',
  version: manifest.version, // the API document's version is the package's
  description: 'The Atelier product catalogue API: products, product details, styles with photos and SKUs, related products.',
  url: import.meta.url, // each worker thread imports this module again from here
  migrations: new URL('../migrations/', import.meta.url),
  routes
}
