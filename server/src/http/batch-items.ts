import { assert, maxBatchItems, type ItemOutcome } from '@baton/core';
import type { FastifySchema } from 'fastify';
import { z } from 'zod';
import { validationFailed } from './validation-error';

/**
 * Batch items judged one by one (docs/design/0015-batches.md): a batch is refused whole only when its body is
 * not a list of 1 to 100 objects; each object is then held to its single route's schema, and one
 * that fails gets that route's 400 as its own item reply while its neighbours go on.
 */

const objects = z.array(z.record(z.string(), z.unknown())).min(1).max(maxBatchItems);
export type UnjudgedItem = z.infer<typeof objects>[number];

/** The strict body each lenient batch schema stands for in the OpenAPI document. */
const documented = new WeakMap<object, z.ZodType>();

/**
 * The body schema a batch route validates: `{[field]: 1 to 100 objects}`. The OpenAPI document
 * shows `strict` in its place (documentedSchema), so clients still read the item's shape.
 */
export function itemsJudgedAlone<F extends string>(field: F, strict: z.ZodType): z.ZodObject<Record<F, typeof objects>> {
  const lenient = z.object({ [field]: objects } as Record<F, typeof objects>);
  documented.set(lenient, strict);
  return lenient;
}

/** For the OpenAPI transform: a route's schema with a lenient batch body put back as the strict body it stands for. */
export function documentedSchema<S extends FastifySchema | undefined>(schema: S): S {
  const strict = schema?.body === undefined ? undefined : documented.get(schema.body as object);
  return strict ? { ...schema, body: strict } : schema;
}

/** Each item held to `schema`: its parsed value, or the 400 its single route would answer (paths under `body`, as that route's). */
export function judgeItems<S extends z.ZodType>(items: readonly UnjudgedItem[], schema: S): ItemOutcome<z.output<S>>[] {
  return items.map((item) => {
    const parsed = schema.safeParse(item);
    return parsed.success ? { ok: true, value: parsed.data } : { ok: false, error: validationFailed('body', parsed.error.issues) };
  });
}

/**
 * Runs `run` over the items that passed their schema, in order, and answers every item in the
 * batch's order, those that failed with their 400. A failed item does nothing, so the others run
 * exactly as they would without it.
 */
export async function applyJudged<I, T>(judged: readonly ItemOutcome<I>[], run: (valid: I[]) => Promise<ItemOutcome<T>[]>): Promise<ItemOutcome<T>[]> {
  const valid = judged.flatMap((item) => (item.ok ? [item.value] : []));
  const outcomes = await run(valid);
  assert(outcomes.length === valid.length, `a batch answered ${outcomes.length} outcomes for ${valid.length} items`);
  let next = 0;
  return judged.map((item) => (item.ok ? outcomes[next++]! : { ok: false, error: item.error }));
}
