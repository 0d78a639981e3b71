// Request validation for every route. Querystrings, params and headers are text, so their values are
// coerced to the schema's types ("5" → 5). JSON bodies are validated as sent: coercing them would
// store `"bytes_tx": null` as 0 or `"7"` as 7.
import Ajv from 'ajv'
import addFormats from 'ajv-formats'

// useDefaults: a missing value takes the schema's default (page=1, count=5), as with Fastify's own ajv.
const options = { allErrors: false, strict: false, useDefaults: true }
const strict = addFormats(new Ajv({ ...options, coerceTypes: false }))
const coercing = addFormats(new Ajv({ ...options, coerceTypes: 'array' }))

/** Fastify's validatorCompiler. */
export function validatorCompiler ({ schema, httpPart }) {
  return namingMissing((httpPart === 'body' ? strict : coercing).compile(schema))
}

// ajv reports a missing property at its parent (`body/3 must have required property 'hour'`); this
// names it as a path like every other error: `body/3/hour is required`, `querystring/hour is required`.
function namingMissing (validate) {
  const wrapped = (data) => {
    const ok = validate(data)
    wrapped.errors = validate.errors?.map((e) => e.keyword === 'required'
      ? { ...e, instancePath: `${e.instancePath}/${e.params.missingProperty}`, message: 'is required' }
      : e)
    return ok
  }
  return wrapped
}
