// The product service, as the kit runs it: name, migrations and routes.
import routes from './routes.js'

export default {
  name: 'product',
  version: '1.0.0',
  description: 'The Atelier product catalogue API: products, product details, styles with photos and SKUs, related products.',
  url: import.meta.url, // each worker thread imports this module again from here
  migrations: new URL('../migrations/', import.meta.url),
  routes
}
