// Module hooks (node:module register) that resolve the k6 modules the scripts import to the stubs
// beside this file, so that node:test can load a k6 script, read its options and run its iterations.
export async function resolve (specifier, context, next) {
  if (specifier === 'k6/http' || specifier === 'k6/execution') {
    return { url: new URL(`./${specifier.slice(3)}.js`, import.meta.url).href, shortCircuit: true }
  }
  return next(specifier, context)
}
