"""Pre-0.4 code: ``T.autograd.Variable(..., volatile=True)`` and a computed volatile flag."""
import torch as T


def embed_corpus(encoder, sentences, chunk=32):
    vectors = []
    for start in range(0, len(sentences), chunk):
        batch = T.autograd.Variable(sentences[start:start + chunk], volatile=True)  # expect: TL105
        vectors.extend(encoder(batch).mean(1).tolist())
    return vectors


def to_input(x, training):
    return T.autograd.Variable(x, volatile=not training)  # expect: TL105
