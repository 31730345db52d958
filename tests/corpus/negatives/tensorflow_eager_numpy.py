# guards: TL402
"""TensorFlow 2 eager code: ``model(x).numpy()`` is how eager tensors convert.

Correct: the file does not import torch; TensorFlow tensors have no
autograd graph attached and ``.numpy()`` is their normal conversion.
"""
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
optimizer = tf.keras.optimizers.Adam()
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = loss_fn(y, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss.numpy(), logits.numpy()
