import type { z } from 'zod';

/** What a caller passes (defaults not yet applied) and what the server answers, for a zod schema. */
export type In<S extends z.ZodType> = z.input<S>;
export type Out<S extends z.ZodType> = z.output<S>;
