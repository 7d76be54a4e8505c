// The one Node global hub.ts uses, so the example compiles with a bare `tsc` (Debian's
// node-typescript ships no Node types, and `@types/node` needs npm). With `@types/node` installed,
// drop this file and put "node" in tsconfig.json's "types" instead.
declare const process: { env: Record<string, string | undefined>; exit(code: number): never };
