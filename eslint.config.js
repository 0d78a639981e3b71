// ESLint (npm test runs it first, scripts/test.js; npm run lint alone): the recommended rules, and the
// standard style the code is written in: no semicolons, a space before a function's parentheses,
// single quotes, 2 spaces, lines of at most 120 characters.
import js from '@eslint/js'
import globals from 'globals'
import stylistic from '@stylistic/eslint-plugin'

export default [
  { ignores: ['**/node_modules/', '.data/', 'coverage/', 'charts/loadtest/scripts/'] },
  js.configs.recommended,
  stylistic.configs.customize({ indent: 2, quotes: 'single', semi: false, commaDangle: 'never', braceStyle: '1tbs' }),
  {
    languageOptions: { ecmaVersion: 'latest', sourceType: 'module', globals: globals.node },
    rules: {
      // Where @stylistic's preset differs from standard's rules, standard's.
      '@stylistic/space-before-function-paren': ['error', 'always'],
      '@stylistic/arrow-parens': 'off',
      '@stylistic/max-statements-per-line': 'off',
      '@stylistic/quote-props': ['error', 'as-needed'],
      '@stylistic/quotes': ['error', 'single', { avoidEscape: true, allowTemplateLiterals: 'avoidEscape' }],
      '@stylistic/operator-linebreak': ['error', 'after', { overrides: { '?': 'before', ':': 'before' } }],
      '@stylistic/generator-star-spacing': ['error', 'both'],
      '@stylistic/yield-star-spacing': ['error', 'both'],
      // standard's choices: unused arguments and caught errors, a rest's siblings, an empty catch are fine
      'no-unused-vars': ['error', { args: 'none', caughtErrors: 'none', ignoreRestSiblings: true }],
      'no-empty': ['error', { allowEmptyCatch: true }],
      'no-new': 'error',
      // Every line, comments and strings included: a long string is split where it reads well.
      '@stylistic/max-len': ['error', { code: 120, tabWidth: 2 }]
    }
  },
  // The k6 scripts run in k6, not Node: its globals (__ENV, open).
  {
    files: ['loadtests/k6/**/*.js'],
    languageOptions: { globals: { __ENV: 'readonly', __VU: 'readonly', __ITER: 'readonly', open: 'readonly' } }
  }
]
