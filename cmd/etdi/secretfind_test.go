package main

// secretShownEnv is a configured env value that a server copies into what
// it shows the model.
const secretShownEnv = "desc-api-key-value-6620-lamp"
