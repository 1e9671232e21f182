import { z } from 'zod';

/** spec 002: low, normal (default), high, critical — delivered in that order, critical first */
export const PRIORITIES = ['low', 'normal', 'high', 'critical'] as const;
export const Priority = z.enum(PRIORITIES);
export type Priority = z.infer<typeof Priority>;

/** the rank the queue orders by, highest first */
export const priorityRank = (p: Priority): number => PRIORITIES.indexOf(p);
