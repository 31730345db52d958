# guards: TL301 TL304
"""Loggers that turn the loss into a number when called: TensorBoard,
wandb, tqdm's postfix, logging, print; a metrics dict overwritten each step
under a constant key; torchmetrics, whose updates run without grad."""
import logging

import torch
import wandb
from torch.utils.tensorboard import SummaryWriter
from torchmetrics import MeanMetric
from tqdm import tqdm

log = logging.getLogger(__name__)


def train(model, loader, optimizer, criterion, epochs, logdir):
    writer = SummaryWriter(logdir)
    train_loss = MeanMetric()
    metrics = {}
    step = 0
    for epoch in range(epochs):
        bar = tqdm(loader)
        for x, y in bar:
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            writer.add_scalar("train/loss", loss, step)
            wandb.log({"loss": loss, "epoch": epoch}, step=step)
            bar.set_postfix(loss=loss)
            train_loss.update(loss)
            metrics["loss"] = loss
            log.info("step %d loss %s", step, loss)
            print(f"epoch {epoch} loss {loss:.4f}")
            step += 1
        writer.add_scalar("train/epoch_loss", train_loss.compute(), epoch)
        train_loss.reset()
    return metrics
