package bot

import (
	"strings"

	"github.com/bwmarrin/discordgo"
)

// descriptions translates the commands' and options' descriptions, by
// locale then by path ("callon", "callon.goal", "roles.set.name"). Adding
// a language is adding a map here; a description without a translation
// stays in English. Discord caps each at 100 characters.
var descriptions = map[discordgo.Locale]map[string]string{
	discordgo.French: {
		"callon":                  "Lancer une équipe dans un nouveau fil (ou dans ce fil) pour travailler sur un objectif",
		"callon.goal":             "Ce sur quoi l'équipe doit travailler",
		"callon.roles":            "Seulement ces rôles du salon, séparés par des virgules (par défaut : tous)",
		"callon.report_to":        "Un salon ou un fil où l'équipe rend compte quand elle a des résultats",
		"team":                    "Montrer l'équipe de ce fil : membres, état et travail en cours",
		"replan":                  "Demander au coordinateur de réorganiser l'équipe",
		"replan.instruction":      "Ce qui doit changer (facultatif)",
		"dissolve":                "Mettre fin à l'équipe de ce fil (demande confirmation)",
		"roles":                   "Voir et changer les rôles que les équipes peuvent utiliser dans un salon (admins)",
		"roles.list":              "Montrer les rôles d'une équipe lancée dans un salon, et d'où ils viennent",
		"roles.list.channel":      "Un autre salon (par défaut : celui-ci)",
		"roles.set":               "Ajouter ou remplacer un rôle, pour ce salon ou tout le serveur",
		"roles.set.name":          "En minuscules, par ex. redacteur ou analyste-marche",
		"roles.set.description":   "Une ligne : à quoi sert le rôle (le coordinateur s'en sert pour répartir)",
		"roles.set.prompt":        "Les consignes du rôle (omettez-les pour les écrire sur plusieurs lignes)",
		"roles.set.model":         "Le modèle qu'il utilise (par défaut : celui des équipiers)",
		"roles.set.scope":         "Ce salon seulement (par défaut), ou tout le serveur",
		"roles.set.temperature":   "Température d'échantillonnage, de 0 à 2",
		"roles.set.max_tokens":    "Nombre maximal de jetons par réponse",
		"roles.set.timeout":       "Secondes qu'il peut passer sur une sous-tâche",
		"roles.set.tools":         "Ce qu'il peut utiliser, séparé par des virgules : fetch_url, serveur.outil, serveur.*",
		"roles.remove":            "Retirer un rôle de ce salon ou de tout le serveur",
		"roles.remove.name":       "Le rôle à retirer",
		"roles.remove.scope":      "Ce salon seulement (par défaut), ou tout le serveur",
		"roles.reset":             "Retirer tous les rôles de ce salon (ou du serveur) et revenir à la source suivante",
		"roles.reset.scope":       "Ce salon seulement (par défaut), ou tout le serveur",
		"budget":                  "Voir et changer combien de jetons les équipes peuvent utiliser (admins)",
		"budget.show":             "Ce que ce serveur (et, dans un fil, l'équipe) a utilisé et peut utiliser",
		"budget.server":           "Fixer le budget quotidien de jetons du serveur (jours UTC), toutes équipes confondues",
		"budget.server.tokens":    "Jetons ; 0 pour aucune limite. Omettez-le pour revenir à la valeur par défaut",
		"budget.team":             "Fixer le budget de jetons de l'équipe de ce fil",
		"budget.team.tokens":      "Jetons ; 0 pour aucune limite. Omettez-le pour revenir à la valeur par défaut",
		"access":                  "Limiter qui peut lancer des équipes et leur parler, et où (admins)",
		"access.show":             "Qui peut lancer des équipes et leur parler, et où",
		"access.allow":            "Autoriser un membre, un rôle ou un salon (dès qu'une liste a des entrées, eux seuls)",
		"access.allow.what":       "Lancer des équipes, ou leur parler",
		"access.allow.user":       "Un membre",
		"access.allow.role":       "Les membres d'un rôle",
		"access.allow.channel":    "Un salon (ses fils compris)",
		"access.remove":           "Retirer un membre, un rôle ou un salon d'une liste",
		"access.remove.what":      "Lancer des équipes, ou leur parler",
		"access.remove.user":      "Un membre",
		"access.remove.role":      "Les membres d'un rôle",
		"access.remove.channel":   "Un salon (ses fils compris)",
		"access.clear":            "Vider une liste : tout le monde peut de nouveau, partout",
		"access.clear.what":       "Lancer des équipes, ou leur parler",
		"access.trust":            "Écouter un bot : il peut lancer des équipes en mentionnant callon, et leur parler",
		"access.trust.bot":        "Un bot (l'utilisateur bot d'une autre application)",
		"access.untrust":          "Ne plus écouter un bot",
		"access.untrust.bot":      "Un bot (l'utilisateur bot d'une autre application)",
		"choice.start teams":      "lancer des équipes",
		"choice.talk to teams":    "parler aux équipes",
		"choice.this channel":     "ce salon",
		"roles.features":          "Activer ou non les personas, la mémoire du salon et le relecteur pour les nouvelles équipes",
		"roles.features.personas": "Les membres publient leur part de la réponse sous leur propre nom (Gérer les webhooks)",
		"roles.features.memory":   "Les équipes gardent des notes pour les équipes suivantes du salon (activé par défaut)",
		"roles.features.review":   "Un relecteur vérifie les réponses fusionnées avant leur envoi ; always : toutes",
		"roles.features.scope":    "Ce salon seulement (par défaut), ou tout le serveur",
		"memory":                  "Voir et modifier les notes que gardent les équipes de ce salon (admins)",
		"memory.show":             "Lister les notes que gardent les équipes de ce salon",
		"memory.forget":           "Retirer une note : aucune équipe ne la revoit",
		"memory.forget.note":      "Le numéro de la note, tel que /memory show le donne",
		"memory.clear":            "Retirer toutes les notes de ce salon",
		"callon.review":           "Un relecteur vérifie les réponses avant leur envoi (par défaut : selon le salon)",
		"choice.on":               "activé",
		"choice.off":              "désactivé",
		"choice.inherit":          "hériter",
		"choice.always":           "toujours",
		"choice.whole server":     "tout le serveur",
	},
}

// localize returns copies of defs with every description translated that
// descriptions has a translation for, choices' names too.
func localize(defs []*discordgo.ApplicationCommand) []*discordgo.ApplicationCommand {
	out := make([]*discordgo.ApplicationCommand, len(defs))
	for i, d := range defs {
		c := *d
		if t := translations(c.Name); t != nil {
			c.DescriptionLocalizations = &t
		}
		c.Options = localizeOptions(c.Name, c.Options)
		out[i] = &c
	}
	return out
}

func localizeOptions(path string, opts []*discordgo.ApplicationCommandOption) []*discordgo.ApplicationCommandOption {
	if opts == nil {
		return nil
	}
	out := make([]*discordgo.ApplicationCommandOption, len(opts))
	for i, o := range opts {
		c := *o
		p := path + "." + c.Name
		c.DescriptionLocalizations = translations(p)
		c.Options = localizeOptions(p, c.Options)
		if c.Choices != nil {
			c.Choices = make([]*discordgo.ApplicationCommandOptionChoice, len(o.Choices))
			for j, ch := range o.Choices {
				cc := *ch
				cc.NameLocalizations = translations("choice." + cc.Name)
				c.Choices[j] = &cc
			}
		}
		out[i] = &c
	}
	return out
}

// translations is every translation of one path; nil when there is none.
func translations(path string) map[discordgo.Locale]string {
	var m map[discordgo.Locale]string
	for locale, texts := range descriptions {
		if t, ok := texts[path]; ok && strings.TrimSpace(t) != "" {
			if m == nil {
				m = map[discordgo.Locale]string{}
			}
			m[locale] = t
		}
	}
	return m
}
