/**
 * The tensor engine on its own: build a tiny computation, get gradients, check them against finite
 * differences, and fit a line with AdamW. Run: `npx tsx examples/01-tensor.ts`
 */
import { AdamW } from '../src/nn/index.js';
import { gradCheck } from '../src/testing/index.js';
import * as T from '../src/tensor/index.js';

// y = softmax(x·W) · [1, 2, 3]; dy/dx and dy/dW by reverse-mode autograd.
const x = T.tensor([0.5, -1, 2], [1, 3], { requiresGrad: true });
const w = T.tensor([0.1, 0.2, 0.3, -0.1, 0.0, 0.4, 0.2, -0.3, 0.1], [3, 3], { requiresGrad: true });
const y = T.sum(T.mul(T.softmax(T.matmul(x, w)), T.tensor([1, 2, 3])));
y.backward();
console.log('y =', y.item().toFixed(4), ' dy/dx =', Array.from(x.grad!.data, (v) => v.toFixed(4)).join(', '));
console.log(
  'gradCheck:',
  gradCheck((a, b) => T.sum(T.mul(T.softmax(T.matmul(a, b)), T.tensor([1, 2, 3]))), [x, w]),
);

// Fit y = 3x − 1 with AdamW.
const slope = T.parameter([0]);
const intercept = T.parameter([0]);
const optimizer = new AdamW(
  [
    { name: 'slope', tensor: slope, decay: false },
    { name: 'intercept', tensor: intercept, decay: false },
  ],
  { learningRate: 0.1 },
);
const inputs = T.tensor([-1, 0, 1, 2], [4]);
const targets = T.tensor([-4, -1, 2, 5], [4]);
for (let step = 0; step < 300; step++) {
  const loss = T.mean(T.square(T.sub(T.add(T.mul(inputs, slope), intercept), targets)));
  optimizer.zeroGrad();
  loss.backward();
  optimizer.step();
}
console.log(
  `fitted: y = ${slope.item().toFixed(3)}x + ${intercept.item().toFixed(3)} (backend ${T.getBackend().name})`,
);
