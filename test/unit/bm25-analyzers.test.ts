import { describe, expect, it } from 'vitest';
import { lightAnalyzer, memoize, porterAnalyzer, porterStem, sStem, tokenize } from '../../src/demo/bm25/analyzers.js';

describe('tokenize', () => {
  it('lower-cases and splits on non-alphanumerics, keeping digits and non-ASCII letters', () => {
    expect(tokenize('Boundary-Layer  control, /destalling/ at M=2.5 .')).toEqual([
      'boundary',
      'layer',
      'control',
      'destalling',
      'at',
      'm',
      '2',
      '5',
    ]);
    expect(tokenize('Überschall Strömung')).toEqual(['überschall', 'strömung']);
    expect(tokenize('  . , ')).toEqual([]);
  });
});

describe('sStem (Harman)', () => {
  it('undoes plurals only', () => {
    const cases: Array<[string, string]> = [
      ['wings', 'wing'],
      ['bodies', 'body'],
      ['flies', 'fly'],
      ['shapes', 'shape'],
      ['gases', 'gase'],
      ['toes', 'toe'],
      ['mass', 'mass'],
      ['radius', 'radius'],
      ['does', 'doe'],
      ['series', 'sery'],
      ['flow', 'flow'],
      ['oscillating', 'oscillating'],
      ['its', 'its'],
    ];
    for (const [word, stem] of cases) expect(sStem(word), word).toBe(stem);
  });
});

describe('porterStem', () => {
  // Expected outputs of Porter's reference implementation (tartarus.org voc.txt/output.txt).
  const cases: Array<[string, string]> = [
    ['caresses', 'caress'],
    ['ponies', 'poni'],
    ['ties', 'ti'],
    ['caress', 'caress'],
    ['cats', 'cat'],
    ['feed', 'feed'],
    ['agreed', 'agre'],
    ['plastered', 'plaster'],
    ['bled', 'bled'],
    ['motoring', 'motor'],
    ['sing', 'sing'],
    ['conflated', 'conflat'],
    ['troubled', 'troubl'],
    ['sized', 'size'],
    ['hopping', 'hop'],
    ['tanned', 'tan'],
    ['falling', 'fall'],
    ['hissing', 'hiss'],
    ['fizzed', 'fizz'],
    ['failing', 'fail'],
    ['filing', 'file'],
    ['happy', 'happi'],
    ['sky', 'sky'],
    ['relational', 'relat'],
    ['conditional', 'condit'],
    ['rational', 'ration'],
    ['valenci', 'valenc'],
    ['digitizer', 'digit'],
    ['conformabli', 'conform'],
    ['radicalli', 'radic'],
    ['differentli', 'differ'],
    ['vileli', 'vile'],
    ['analogousli', 'analog'],
    ['vietnamization', 'vietnam'],
    ['predication', 'predic'],
    ['operator', 'oper'],
    ['feudalism', 'feudal'],
    ['decisiveness', 'decis'],
    ['hopefulness', 'hope'],
    ['callousness', 'callous'],
    ['formaliti', 'formal'],
    ['sensitiviti', 'sensit'],
    ['sensibiliti', 'sensibl'],
    ['triplicate', 'triplic'],
    ['formative', 'form'],
    ['formalize', 'formal'],
    ['electriciti', 'electr'],
    ['electrical', 'electr'],
    ['hopeful', 'hope'],
    ['goodness', 'good'],
    ['revival', 'reviv'],
    ['allowance', 'allow'],
    ['inference', 'infer'],
    ['airliner', 'airlin'],
    ['gyroscopic', 'gyroscop'],
    ['adjustable', 'adjust'],
    ['defensible', 'defens'],
    ['irritant', 'irrit'],
    ['replacement', 'replac'],
    ['adjustment', 'adjust'],
    ['dependent', 'depend'],
    ['adoption', 'adopt'],
    ['communism', 'commun'],
    ['activate', 'activ'],
    ['angulariti', 'angular'],
    ['homologous', 'homolog'],
    ['effective', 'effect'],
    ['bowdlerize', 'bowdler'],
    ['probate', 'probat'],
    ['rate', 'rate'],
    ['cease', 'ceas'],
    ['controlling', 'control'],
    ['roll', 'roll'],
    ['generalizations', 'gener'],
    ['oscillators', 'oscil'],
    ['oscillating', 'oscil'],
    ['aerodynamic', 'aerodynam'],
  ];
  it.each(cases)('%s → %s', (word, stem) => {
    expect(porterStem(word)).toBe(stem);
  });
  it('leaves short words, numbers and non-ASCII words alone', () => {
    expect(porterStem('as')).toBe('as');
    expect(porterStem('1958')).toBe('1958');
    expect(porterStem('strömung')).toBe('strömung');
  });
});

describe('analyzers', () => {
  it('drop stopwords and stem with different strength', () => {
    expect(lightAnalyzer('The')).toBeNull();
    expect(porterAnalyzer('what')).toBeNull();
    expect(lightAnalyzer('Oscillations')).toBe('oscillation');
    expect(porterAnalyzer('Oscillations')).toBe('oscil');
  });
  it('memoize returns the same stems and stops caching at its bound', () => {
    let calls = 0;
    const stem = memoize((w) => {
      calls++;
      return w.slice(0, 3);
    }, 1);
    expect([stem('abcd'), stem('abcd'), stem('wxyz'), stem('wxyz')]).toEqual(['abc', 'abc', 'wxy', 'wxy']);
    expect(calls).toBe(3); // 'abcd' cached, 'wxyz' not (bound 1)
  });
});
