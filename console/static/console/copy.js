// Progressive enhancement: a "Copy" button beside a shown-once secret. Without script the
// button stays hidden and the secret can be selected and copied by hand.
document.querySelectorAll("button.copy[data-copy]").forEach((button) => {
  const source = document.getElementById(button.dataset.copy);
  if (!source || !navigator.clipboard) return;
  button.hidden = false;
  button.addEventListener("click", () => {
    navigator.clipboard.writeText(source.textContent.trim()).then(() => {
      button.textContent = "Copied";
    });
  });
});
