// Reading the values of a Lua script's reply.
export const str = (value: string | number | null | undefined): string => (value === null || value === undefined ? '' : String(value));
