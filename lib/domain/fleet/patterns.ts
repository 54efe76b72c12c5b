/** A cell id: it goes into every name of the cell (`<app>-<cell>-…`). */
export const CELL_ID = /^[a-z][a-z0-9-]{1,30}$/;
/** An application name: it prefixes every stack, alarm, role and account name. */
export const APP_NAME = /^[a-z][a-z0-9-]{1,20}$/;
/** A tier's name (`cells[].tier`, `capacity.defaultTier`). */
export const TIER_NAME = /^[a-z][a-z0-9-]{0,30}$/;
