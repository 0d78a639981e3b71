// menus.csv → menus. `dishes` is the JSON of the dish array in one quoted CSV field, empty for a
// link menu; a row whose JSON is broken is rejected (invalid_dishes), the rest load.
export const tables = [
  {
    file: 'menus.csv',
    table: 'menus',
    columns: { id: 'id', dishes: 'json?', link: 'text?' },
    primaryKey: 'id'
  }
]
