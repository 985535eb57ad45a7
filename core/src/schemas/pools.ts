import { z } from 'zod';
import { capacityBounds } from '../pools/model';
import { name, pageOf, timestamp, uuid } from './common';

const bound = `${capacityBounds.min} to ${capacityBounds.max.toLocaleString('en-US')}`;
const units = z.number().int().min(capacityBounds.min).max(capacityBounds.max);

export const poolCreateBody = z.object({
  name,
  capacity: units.describe(`Units the pool holds, ${bound}`),
});
export type PoolCreateBody = z.infer<typeof poolCreateBody>;

export const workLimitCreateBody = z.object({
  name,
  maxConcurrent: units.describe(`Admitted tasks naming this limit that may run at once, ${bound}`),
});
export type WorkLimitCreateBody = z.infer<typeof workLimitCreateBody>;

const count = z.number().int().min(0);

export const poolView = z
  .object({
    id: uuid,
    name: z.string(),
    capacity: z.number().int(),
    inUse: count.describe('Units held by admitted deliveries'),
    available: count.describe('capacity - inUse'),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Pool' });
export type PoolView = z.infer<typeof poolView>;

export const workLimitView = z
  .object({
    id: uuid,
    name: z.string(),
    maxConcurrent: z.number().int(),
    inUse: count.describe('Slots held by admitted deliveries'),
    available: count.describe('maxConcurrent - inUse'),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'WorkLimit' });
export type WorkLimitView = z.infer<typeof workLimitView>;

export const poolPage = pageOf(poolView);
export const workLimitPage = pageOf(workLimitView);
