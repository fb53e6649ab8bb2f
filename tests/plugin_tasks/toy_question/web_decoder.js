// The toy task's answer in the browser, as its serving_default gives it:
// [CLS] sentence [SEP] through the model, then the sigmoid of its logit.
import { pack } from "./text.js";

export async function answer(model, [sentence]) {
  const ids = model.tokenizer.tokenize(String(sentence)).ids;
  const packed = pack(ids, null, model.head.max_seq_length, model.tokenizer.special);
  const probability = 1 / (1 + Math.exp(-(await model.run(packed)).logit[0]));
  return { is_question: probability >= model.head.min_probability, probability };
}
