// menus.csv → menus. `dishes` is the JSON of the dish array in one quoted CSV field, empty for a
// link menu. The kit's loader has no json type yet: it passes the text through (`text?`) and
// PostgreSQL's COPY parses it into the jsonb column (invalid JSON fails the load, it is not rejected
// row by row). See the report for the `json` type proposed for services/kit/src/etl/load.js.
export const tables = [
  {
    file: 'menus.csv',
    table: 'menus',
    columns: { id: 'id', dishes: 'text?', link: 'text?' },
    primaryKey: 'id'
  }
]
