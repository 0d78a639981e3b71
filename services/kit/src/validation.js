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
  return namingTheField((httpPart === 'body' ? strict : coercing).compile(schema))
}

// ajv reports a missing or an unknown property at its parent (`body/3 must have required property
// 'hour'`, `body must NOT have additional properties`); this names it as a path like every other
// error: `body/3/hour is required`, `body/owner is not allowed`.
function namingTheField (validate) {
  const wrapped = (data) => {
    const ok = validate(data)
    wrapped.errors = validate.errors?.map((e) => {
      if (e.keyword === 'required') return { ...e, instancePath: `${e.instancePath}/${e.params.missingProperty}`, message: 'is required' }
      if (e.keyword === 'additionalProperties') return { ...e, instancePath: `${e.instancePath}/${e.params.additionalProperty}`, message: 'is not allowed' }
      return e
    })
    return ok
  }
  return wrapped
}
