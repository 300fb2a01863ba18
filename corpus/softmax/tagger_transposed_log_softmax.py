"""A sequence tagger whose forward ends with log_softmax over the tag dim; the scores are
transposed to (batch, tags, time) for CrossEntropyLoss, which applies log_softmax again."""
import torch
import torch.nn as nn
import torch.optim as optim


class LSTMTagger(nn.Module):
    def __init__(self, vocab_size, tagset_size, embedding_dim=16, hidden_dim=32):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim, batch_first=True)
        self.hidden2tag = nn.Linear(hidden_dim, tagset_size)

    def forward(self, sentence):
        embeds = self.word_embeddings(sentence)
        lstm_out, _ = self.lstm(embeds)
        tag_space = self.hidden2tag(lstm_out)
        return torch.log_softmax(tag_space, dim=2)  # (batch, time, tags)


torch.manual_seed(0)
model = LSTMTagger(vocab_size=50, tagset_size=5)
criterion = nn.CrossEntropyLoss(ignore_index=-100)
optimizer = optim.Adam(model.parameters(), lr=0.01)

inputs = torch.randint(0, 50, (8, 12))
targets = torch.randint(0, 5, (8, 12))
for step in range(3):
    optimizer.zero_grad()
    tag_scores = model(inputs)
    loss = criterion(tag_scores.permute(0, 2, 1), targets)  # classes on dim 1
    loss.backward()
    optimizer.step()
    print(f"step {step}: {loss.item():.4f}")
