/** Value shapes the config schemas share. */
import { z } from 'zod';

export const httpUrl = z.string().refine((value) => {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}, 'expected an http(s) URL');

export const positiveInt = z.int().min(1);
export const nonNegativeInt = z.int().min(0);
