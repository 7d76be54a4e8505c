// The one Node global the TypeScript hub example uses, for compiling it without @types/node
// (Debian's node-typescript ships no Node types). A real project has @types/node instead.
declare const process: { env: Record<string, string | undefined>; exit(code: number): never };
