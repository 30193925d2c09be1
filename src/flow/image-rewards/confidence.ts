/**
 * Image reward `confidence`: the digit classifier's probability of the class each image was asked for,
 * Flow-GRPO's learned-reward slot at digit scale. Is not: the classifier (digit-classifier.ts).
 */
import { classProbabilities } from '../digit-classifier.js';
import { defineImageReward } from '../image-reward.js';

export const confidenceReward = defineImageReward({
  name: 'confidence',
  description: "the digit classifier's probability of the class asked for (needs a classifier)",
  citation: 'src/flow/digit-classifier.ts',
  options: ['flow.classifier'],
  needsClassifier: true,
  score: ({ images, labels, classifier }) => {
    // checkRewardWeights refuses a run without one before any compute; this guards direct callers.
    if (classifier === null) throw new Error('image reward "confidence": needs a digit classifier');
    return Float32Array.from(classProbabilities(classifier, images), (row, index) => row[labels[index]]);
  },
});
